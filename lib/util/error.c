/* util/error.c — formatting of felix_err. */
#include "felix/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

felix_status felix_fail(felix_err *err, felix_status status, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->status = status;
    err->sys_errno = 0;
  }
  return status;
}

felix_status felix_fail_errno(felix_err *err, felix_status status, int errnum, const char *fmt,
                              ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof err->msg)
      snprintf(err->msg + n, sizeof err->msg - (size_t)n, ": %s", strerror(errnum));
    err->status = status;
    err->sys_errno = errnum;
  }
  return status;
}

const char *felix_status_name(felix_status status) {
  switch (status) {
  case FELIX_OK: return "ok";
  case FELIX_E_IO: return "io";
  case FELIX_E_CORRUPT: return "corrupt";
  case FELIX_E_NOTFOUND: return "not found";
  case FELIX_E_BUSY: return "busy";
  case FELIX_E_INVAL: return "invalid";
  case FELIX_E_SYNC: return "sync failed";
  case FELIX_E_TRUNCATED: return "truncated";
  case FELIX_E_CLOSED: return "closed";
  case FELIX_E_UNREACHABLE: return "unreachable";
  case FELIX_E_UNAVAILABLE: return "unavailable";
  case FELIX_E_REFUSED: return "refused";
  case FELIX_E_GONE: return "directory gone";
  }
  return "unknown";
}
