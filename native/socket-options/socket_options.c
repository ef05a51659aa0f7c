// setsockopt/getsockopt and the kernel's queue sizes for a socket descriptor, through Node-API
// (C, no dependency). Errors come back as a negative errno, never as an exception.
#include <errno.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <node_api.h>
#ifdef __linux__
#include <linux/sockios.h>
#endif

#define CHECK(call) if ((call) != napi_ok) return NULL

static napi_status int_args(napi_env env, napi_callback_info info, size_t want, int32_t *out) {
  napi_value argv[4];
  size_t argc = 4;
  napi_status status = napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (status != napi_ok) return status;
  if (argc < want) return napi_invalid_arg;
  for (size_t i = 0; i < want; i++) {
    status = napi_get_value_int32(env, argv[i], &out[i]);
    if (status != napi_ok) return status;
  }
  return napi_ok;
}

static napi_value number(napi_env env, int32_t value) {
  napi_value out;
  CHECK(napi_create_int32(env, value, &out));
  return out;
}

// setsockopt(fd, level, name, value) -> 0 or -errno
static napi_value set_int(napi_env env, napi_callback_info info) {
  int32_t a[4];
  if (int_args(env, info, 4, a) != napi_ok) return number(env, -EINVAL);
  int value = a[3];
  return number(env, setsockopt(a[0], a[1], a[2], &value, sizeof value) == 0 ? 0 : -errno);
}

// getsockopt(fd, level, name) -> value (>= 0) or -errno
static napi_value get_int(napi_env env, napi_callback_info info) {
  int32_t a[3];
  if (int_args(env, info, 3, a) != napi_ok) return number(env, -EINVAL);
  int value = 0;
  socklen_t length = sizeof value;
  return number(env, getsockopt(a[0], a[1], a[2], &value, &length) == 0 ? value : -errno);
}

// queue(fd, which) -> bytes or -errno; which: 0 send queue (unacknowledged + unsent),
// 1 unsent, 2 receive queue (unread).
static napi_value queue(napi_env env, napi_callback_info info) {
  int32_t a[2];
  if (int_args(env, info, 2, a) != napi_ok) return number(env, -EINVAL);
  int value = 0;
#ifdef __linux__
  unsigned long request = a[1] == 0 ? SIOCOUTQ : a[1] == 1 ? SIOCOUTQNSD : SIOCINQ;
  if (ioctl(a[0], request, &value) != 0) return number(env, -errno);
#elif defined(__APPLE__)
  if (a[1] == 2) {
    if (ioctl(a[0], FIONREAD, &value) != 0) return number(env, -errno);
  } else {
    socklen_t length = sizeof value;
    if (getsockopt(a[0], SOL_SOCKET, SO_NWRITE, &value, &length) != 0) return number(env, -errno);
  }
#else
  return number(env, -ENOTSUP);
#endif
  return number(env, value);
}

static void constant(napi_env env, napi_value target, const char *name, int32_t value) {
  napi_value v;
  if (napi_create_int32(env, value, &v) == napi_ok) napi_set_named_property(env, target, name, v);
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor fns[] = {
    { "setInt", NULL, set_int, NULL, NULL, NULL, napi_default, NULL },
    { "getInt", NULL, get_int, NULL, NULL, NULL, napi_default, NULL },
    { "queue", NULL, queue, NULL, NULL, NULL, napi_default, NULL },
  };
  CHECK(napi_define_properties(env, exports, sizeof fns / sizeof fns[0], fns));
  napi_value c;
  CHECK(napi_create_object(env, &c));
  constant(env, c, "SOL_SOCKET", SOL_SOCKET);
  constant(env, c, "SO_SNDBUF", SO_SNDBUF);
  constant(env, c, "SO_RCVBUF", SO_RCVBUF);
  constant(env, c, "IPPROTO_TCP", IPPROTO_TCP);
#ifdef TCP_NOTSENT_LOWAT
  constant(env, c, "TCP_NOTSENT_LOWAT", TCP_NOTSENT_LOWAT);
#endif
  CHECK(napi_set_named_property(env, exports, "constants", c));
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
