// Cross-checks trainyard's SNS string-to-sign with AWS's own validator (npm sns-validator).
// DIR/sns-messages.json: {"valid": [message text], "invalid": [message text]}; the messages were
// signed (openssl CLI) over the canonical string trainyard built, and their certificate is
// served by the test's HTTPS server at HOST (trusted through NODE_EXTRA_CA_CERTS).
// Usage: node sns-check.js DIR HOST
"use strict";
const fs = require("fs");
const path = require("path");
const MessageValidator = require("sns-validator");

const [dir, host] = process.argv.slice(2);
const escaped = host.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const validator = new MessageValidator(new RegExp(`^${escaped}$`));
const { valid, invalid } = JSON.parse(fs.readFileSync(path.join(dir, "sns-messages.json"), "utf8"));

function check(text) {
  return new Promise((resolve) => validator.validate(text, (err) => resolve(err)));
}

(async () => {
  let failed = 0;
  for (const [i, text] of valid.entries()) {
    const err = await check(text);
    if (err) {
      failed++;
      console.error(`sns-check: valid message ${i} rejected: ${err.message}`);
    }
  }
  for (const [i, text] of invalid.entries()) {
    if (!(await check(text))) {
      failed++;
      console.error(`sns-check: tampered message ${i} accepted`);
    }
  }
  console.log(`sns-check: ${valid.length} valid and ${invalid.length} tampered messages, ` +
              `${failed} wrong`);
  process.exit(failed ? 1 : 0);
})();
