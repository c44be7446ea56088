// A node program for tests/integration/test_runtimes.py: exceptions thrown and caught,
// maps and strings, promises and a timer, and an exit status of its own. It prints
// what it did, so a traced run can be compared with an untraced one.
'use strict';
let sum = 0;
let caught = 0;
const seen = new Map();
for (let i = 0; i < 3000; i++) {
  seen.set('k' + (i % 500), i);
  try {
    if (i % 97 === 0) throw new RangeError('bad ' + i);
    sum += i;
  } catch (e) {
    caught++;
    sum += e.message.length;
  }
}
async function later(n) {
  await new Promise((resolve) => setTimeout(resolve, 10));
  return n * 2;
}
Promise.all([later(1), later(2), later(3)]).then((values) => {
  console.log('caught', caught);
  console.log('keys', seen.size);
  console.log('sum', sum);
  console.log('later', values.join(','));
  process.exitCode = 3;
});
