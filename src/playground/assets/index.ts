// The page's assets, embedded as strings so that `tsc` carries them into dist/ (no copy step, no CDN).
export { PLAYGROUND_HTML } from './html';
export { PLAYGROUND_CSS } from './css';
export { PLAYGROUND_JS } from './js';
