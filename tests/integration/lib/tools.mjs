// A tool call over REST that must succeed, and a screenshot decoded: the
// wlroots and GNOME tests' shared helpers.
import assert from 'node:assert/strict';
import { decodePng } from './png.mjs';

/** The tool's structuredContent; fails the test on an HTTP or tool error. */
export async function ok(d, name, args = {}) {
  const r = await d.tool(name, args);
  assert.equal(r.status, 200, `${name} ${JSON.stringify(args).slice(0, 200)} -> ${r.status} ${JSON.stringify(r.body).slice(0, 400)}`);
  assert.ok(!r.body.isError, JSON.stringify(r.body).slice(0, 400));
  return r.body.structuredContent;
}

/** A PNG screenshot: its metadata and decoded pixels. */
export async function shot(d, args = {}) {
  const r = await d.tool('screenshot', args);
  assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 400));
  const img = r.body.content.find((c) => c.type === 'image');
  return { meta: r.body.structuredContent, png: decodePng(Buffer.from(img.data, 'base64')) };
}
