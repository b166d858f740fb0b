/* control-plane/auth.h — bearer tokens of the control plane (docs/control-plane-api.md
 * "Authentication"): the broker token for /v1/broker/..., the admin token for
 * everything else. */
#ifndef FELIX_CP_AUTH_H
#define FELIX_CP_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "felix/error.h"

#define CP_TOKEN_MAX 256

typedef struct cp_tokens {
  char admin[CP_TOKEN_MAX];
  char broker[CP_TOKEN_MAX];
} cp_tokens;

/* Reads the token in path (one line, trailing newline ignored), or, when the
 * file does not exist and create is true, writes 32 random hex characters to
 * it with mode 0600 and sets *created. An empty token file is refused. */
felix_status cp_token_load_or_create(const char *path, bool create, char out[CP_TOKEN_MAX], bool *created,
                                     felix_err *err);

/* Compares in time that depends only on the lengths, never on where the
 * strings first differ. */
bool cp_token_equal(const char *a, const char *b);

/* True when url needs the broker token (/v1/broker/...), else the admin token. */
bool cp_auth_wants_broker(const char *url);

/* Checks an Authorization header value ("Bearer <token>", may be NULL). */
bool cp_auth_check(const cp_tokens *t, const char *url, const char *authorization);

#endif
