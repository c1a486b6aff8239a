// Keeps a dashboard page current without reloading it: every few
// seconds it fetches the same page's <main> (the server renders it; the
// X-Pinbot-Live header asks for it alone) and swaps it in when it
// changed. Open <details> stay open and the focus stays where it was.
// A fetch that fails marks the page stale and is retried.
"use strict";
(function () {
  const main = document.getElementById("main");
  const every = Number(document.body.dataset.refresh || "0") * 1000;
  if (!main || every <= 0) {
    return;
  }
  const updated = document.getElementById("updated");
  let last = null;

  function swap(html) {
    const open = new Set(Array.from(main.querySelectorAll("details[open][id]"), (d) => d.id));
    const focused = document.activeElement && main.contains(document.activeElement) ? document.activeElement.id : "";
    const t = document.createElement("template");
    t.innerHTML = html;
    t.content.querySelectorAll("details[id]").forEach((d) => {
      d.open = open.has(d.id);
    });
    main.replaceChildren(t.content);
    if (focused) {
      const el = document.getElementById(focused);
      if (el) {
        el.focus();
      }
    }
  }

  async function tick() {
    try {
      const resp = await fetch(location.href, { headers: { "X-Pinbot-Live": "1" }, cache: "no-store", credentials: "same-origin" });
      if (!resp.ok) {
        throw new Error(resp.status + " " + resp.statusText);
      }
      const html = await resp.text();
      if (last !== null && html !== last) {
        swap(html);
      }
      last = html;
      document.body.dataset.live = "ok";
      if (updated) {
        const now = new Date();
        updated.dateTime = now.toISOString();
        updated.textContent = now.toISOString().replace(/\.\d+Z$/, "Z");
      }
    } catch (e) {
      document.body.dataset.live = "stale";
    }
    setTimeout(tick, every);
  }
  tick();
})();
