'use strict';
// S2chunk: S2 with the upstream writing one HTTP chunk per ~170 B event (see s2.js).
const { runShape } = require('./s2');

module.exports = { key: 'S2CHUNK', run: (hn) => runShape(hn, 'S2chunk', hn.P.s2chunk, 'event') };
