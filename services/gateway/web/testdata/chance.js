// Node harness for static/app.js's chance of a ticket (run by
// TestChanceAgreesWithGo): the page's chanceOf and chanceWords, taken
// from app.js, against cases computed by pkg/chance (JSON on stdin:
// [{p, ahead, chance, words}]). Usage: node chance.js path/to/app.js
"use strict";
const fs = require("fs");
const vm = require("vm");

const src = fs.readFileSync(process.argv[2], "utf8");
const from = src.indexOf("  function chanceOf("), to = src.indexOf("  // showChance");
if (from < 0 || to < from) { console.error("chanceOf … showChance not found in app.js"); process.exit(1); }
const ctx = { Math };
vm.createContext(ctx);
vm.runInContext(src.slice(from, to) + "\nthis.chanceOf = chanceOf; this.chanceWords = chanceWords;", ctx);
const cases = JSON.parse(fs.readFileSync(0, "utf8"));
let bad = 0;
for (const c of cases) {
  const got = ctx.chanceOf(c.p, c.ahead), words = ctx.chanceWords(got);
  if (got !== c.chance || words !== c.words) {
    if (++bad <= 5) console.error(`${JSON.stringify(c)}: page says ${got} (${words})`);
  }
}
if (bad) { console.error(`${bad} of ${cases.length} differ`); process.exit(1); }
console.log("ok", cases.length);
