'use strict';
// The compiled addon; requiring this throws when it was not built (no compiler, no headers).
module.exports = require('./build/Release/socket_options.node');
