// The dashboard in the browser tests (tests/e2e): a page opened with a
// token and live, with its page errors collected; an MCP agent beside it.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** The dashboard for token (default the person's), live; page.problems
 *  collects its errors. context: open it there (else a new one, closed
 *  after the test). */
export async function openDashboard(chrome, t, deskd, token = deskd.personToken,
  { context = null, viewport = { width: 1400, height: 900 } } = {}) {
  const ctx = context || await chrome.browser.newContext({ viewport });
  if (!context) t.after(() => ctx.close().catch(() => {}));
  const page = await ctx.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('dialog', (d) => d.accept());   // the take-over confirm
  await page.goto(`${deskd.url}/#token=${encodeURIComponent(token)}`);
  await page.waitForSelector('#app:not([hidden])');
  await page.waitForFunction(() => document.querySelector('#conn').dataset.state === 'live');
  page.problems = problems;
  return page;
}

/** An MCP agent (the SDK client) with the agent's token, closed after the test. */
export async function sdkClient(t, deskd, name = 'e2e-agent') {
  const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(deskd.url + '/mcp'),
    { requestInit: { headers: { Authorization: `Bearer ${deskd.token}` } } });
  await client.connect(transport);
  t.after(() => client.close().catch(() => {}));
  return client;
}
