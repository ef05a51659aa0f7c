'use strict';
// Small statistics the scenarios and the report share.

/** The median of the numbers in `values` (the mean of the middle two for an even count); null if none. */
function median(values) {
  const a = values.filter((v) => typeof v === 'number' && Number.isFinite(v)).sort((x, y) => x - y);
  if (!a.length) return null;
  const m = a.length >> 1;
  return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2;
}

module.exports = { median };
