// The status page in a real browser (headless Chromium driven by
// playwright-core), against the router binary and fake providers that
// status_test.go runs. It checks what an operator sees without reloading
// the page: a served request in the recent list within 1 s with its
// attempts, a key's spend moving, a provider that starts failing shown
// open within 2 s of its breaker opening, and that text a client or a
// provider chose (an <img onerror> in a model name and in a provider's
// error) is shown as text and runs nothing; a cross-site form POST to
// enable is refused; the page never holds the prompt or the client key.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const ADMIN = process.env.ADMIN_URL;     // http://127.0.0.1:port
const API = process.env.API_URL;         // http://127.0.0.1:port
const KEY = process.env.CLIENT_KEY;
const PROMPT = process.env.PROMPT;       // the prompt every request sends
const HOSTILE = process.env.HOSTILE;     // <img src=x onerror=...>
const CONTROL = process.env.CONTROL_URL; // flips the flaky fake
const EVIL = process.env.EVIL_URL;       // another site's page
const SHOTS = process.env.SHOTS;         // where screenshots go

let context, page, profile;
const pageErrors = [];
const shot = (name) => page.screenshot({ path: join(SHOTS, name + ".png"), fullPage: true });

before(async () => {
  profile = mkdtempSync(join(tmpdir(), "llmrouter-chromium-"));
  // A fresh profile (--user-data-dir, which Playwright sets from its
  // first argument).
  context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: { width: 1500, height: 1100 },
  });
  page = await context.newPage();
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  await page.goto(ADMIN + "/");
  await page.waitForSelector("#conn:not(.off)", { timeout: 5000 });
  await page.waitForSelector('tr[data-provider="flaky"] .state', { timeout: 5000 });
});

after(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

// chat sends one chat completion with the client key and the prompt.
async function chat(model, id) {
  const r = await fetch(API + "/v1/chat/completions", {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: "Bearer " + KEY, "X-Request-ID": id },
    body: JSON.stringify({ model, messages: [{ role: "user", content: PROMPT }] }),
  });
  await r.text();
  return r.status;
}

const cell = (sel) => page.$eval(sel, (e) => e.textContent);

// recentRow waits for the recent row of request id, within ms, and returns
// its cells' text by class.
async function recentRow(id, ms) {
  const sel = `#recent-body tr[data-id="${id}"]`;
  await page.waitForSelector(sel, { timeout: ms });
  return page.$eval(sel, (tr) => Object.fromEntries([...tr.cells].map((c) => [c.className.split(" ")[0], c.textContent])));
}

test("a served request is in the recent list within 1 s, with its attempts; the key's spend moves", async () => {
  const spend = await cell('tr[data-key="team-a"] .spend');
  assert.equal(await chat("m", "status-served"), 200);
  const row = await recentRow("status-served", 1000);
  assert.equal(row.attempts, "flaky:ok");
  assert.equal(row.key, "team-a");
  assert.equal(row.model, "m");
  assert.equal(row.status, "200");
  await page.waitForFunction((before) => document.querySelector('tr[data-key="team-a"] .spend').textContent !== before,
    spend, { timeout: 3000 });
  await shot("01-served");
});

test("a provider that starts failing shows open within 2 s; its error is text", async () => {
  await fetch(CONTROL + "/fail", { method: "POST" });
  let opened = 0;
  for (let i = 0; i < 20 && !opened; i++) {
    assert.equal(await chat("m", "status-failover-" + i), 200); // failed over to steady
    const ps = await (await fetch(ADMIN + "/admin/providers")).json();
    if (ps.providers.find((p) => p.name === "flaky").state === "open") opened = Date.now();
  }
  assert.ok(opened, "the flaky provider's breaker never opened");
  await page.waitForFunction(() => document.querySelector('tr[data-provider="flaky"] .state').textContent.startsWith("open"),
    null, { timeout: 2000 });
  assert.ok(Date.now() - opened <= 2000, "the row showed open " + (Date.now() - opened) + "ms after the breaker opened");

  const row = await recentRow("status-failover-0", 1000);
  assert.match(row.attempts, /^flaky:server_error → (flaky:server_error → )*steady:ok/);
  assert.ok(row.attempts.includes(HOSTILE), "the provider's error is shown as text: " + row.attempts);
  const last = await cell('tr[data-provider="flaky"] .lasterror');
  assert.ok(last.startsWith("server_error"), last);
  assert.ok(last.includes(HOSTILE), "the provider's last error is shown as text: " + last);
  await shot("02-failing");
});

test("an <img onerror> in a model name and a provider's error runs nothing", async () => {
  assert.equal(await chat(HOSTILE, "status-hostile"), 404);
  const row = await recentRow("status-hostile", 1000);
  assert.equal(row.asked, HOSTILE);
  assert.equal(row.status, "404");
  // Give a payload the time an image error takes, then look for its mark.
  await page.waitForTimeout(300);
  assert.equal(await page.evaluate(() => window.__pwned), undefined, "a payload ran");
  assert.equal(await page.evaluate(() => document.querySelectorAll("img").length), 0, "an <img> element was made");
  await page.fill('#filters input[name="failure"]', "server_error");
  await shot("03-hostile-filtered");
  await page.fill('#filters input[name="failure"]', "");
});

test("a cross-site form POST to enable is refused", async () => {
  const evil = await page.context().newPage();
  const refused = evil.waitForResponse((r) => r.url().endsWith("/admin/providers/flaky/enable"), { timeout: 5000 });
  await evil.goto(EVIL);
  assert.equal((await refused).status(), 403);
  await evil.close();
});

test("the page, its data and the ring never hold the prompt or the client key", async () => {
  const texts = [await page.content()];
  for (const path of ["/admin/recent", "/admin/state", "/admin/config", "/app.js", "/"]) {
    texts.push(await (await fetch(ADMIN + path)).text());
  }
  for (const t of texts) {
    assert.ok(!t.includes(PROMPT), "the prompt reached the page");
    assert.ok(!t.includes(KEY), "the client key reached the page");
  }
  await shot("04-final");
  assert.deepEqual(pageErrors, [], "the page's script failed");
});
