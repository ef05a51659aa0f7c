import { closeAll } from './net';

// Every spec file: whatever the harness opened and the file's own teardown missed (its setup
// threw first) is closed, so jest can exit without forceExit.
afterAll(() => closeAll());
