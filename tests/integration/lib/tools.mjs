// A tool call over REST that must succeed, and a screenshot decoded: the
// wlroots and GNOME tests' shared helpers.
import assert from 'node:assert/strict';
import { decodePng } from './png.mjs';
import { sleep, waitUntil } from './harness.mjs';

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

/** The window once the compositor stopped moving it: the same x, y, width
 *  and height on two reads 250 ms apart (a shell lists a new window before
 *  it places it, at 0,32 on a slow start). */
export async function settledWindow(d, id, { timeout = 20000, what = `window ${id} in place` } = {}) {
  let w, last = '';
  await waitUntil(async () => {
    w = (await ok(d, 'windows')).windows.find((x) => x.id === id);
    const now = w && JSON.stringify([w.x, w.y, w.width, w.height]);
    const same = now && now === last;
    last = now;
    if (!same) await sleep(250);
    return same;
  }, { timeout, what });
  return w;
}
