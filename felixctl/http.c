/* http.c — the control-plane client: one libcurl request per call, the admin
 * token as a bearer token, JSON answers, and the mapping of every failure to
 * felixctl's exit codes (DESIGN.md §5):
 *
 *   cannot connect / no answer in time  5   names the URL it tried
 *   401                                 1   hint: the token file
 *   400                                 2   the server's error names the field
 *   404                                 3
 *   409, 422                            4   refused, with the server's reason
 *   anything else                       1
 *
 * The control plane's `{"error", "hint"}` body is printed as it came; its
 * hint wins over ours because it knows more. Answers are capped at 64 MiB so
 * a wrong URL cannot make felixctl eat memory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "felixctl.h"

#define CTL_MAX_BODY (64u * 1024 * 1024)
#define CTL_MAX_TOKEN 1024

void ctl_http_global_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }
void ctl_http_global_cleanup(void) { curl_global_cleanup(); }

void ctl_reply_free(ctl_reply *r) {
  cJSON_Delete(r->json);
  free(r->body);
  memset(r, 0, sizeof *r);
}

/* The token is read at each request: commands make a handful, and a file
 * rotated under a long `consume --follow` is then picked up. */
static int load_token(const ctl_opts *o, char *token, size_t cap) {
  if (!o->token_file)
    return ctl_error(FELIX_EXIT_USAGE,
                     "give --token-file FILE, set FELIX_TOKEN_FILE or a context's token file (felixctl config "
                     "set-context); the control plane writes its admin token next to its database as <db>.admin-token",
                     "no admin token file: this command talks to the control plane");
  FILE *f = fopen(o->token_file, "r");
  if (!f)
    return ctl_error(FELIX_EXIT_FAILURE, "give another with --token-file, FELIX_TOKEN_FILE or felixctl config set-context",
                     "cannot read the token file %s (from %s): %s", o->token_file, o->token_file_from, strerror(errno));
  size_t n = fread(token, 1, cap - 1, f);
  bool more = n == cap - 1 && fgetc(f) != EOF;
  fclose(f);
  token[n] = '\0';
  while (n > 0 && (token[n - 1] == '\n' || token[n - 1] == '\r' || token[n - 1] == ' ' || token[n - 1] == '\t'))
    token[--n] = '\0';
  bool printable = n > 0 && !more;
  for (size_t i = 0; i < n && printable; i++) printable = token[i] > ' ' && token[i] < 127;
  if (!printable)
    return ctl_error(FELIX_EXIT_FAILURE, "a token file holds the token on one line",
                     "the token file %s does not hold a token", o->token_file);
  return 0;
}

static size_t collect(char *p, size_t size, size_t n, void *userdata) {
  ctl_reply *r = userdata;
  size_t k = size * n;
  if (r->len + k > CTL_MAX_BODY) return 0; /* makes curl fail with CURLE_WRITE_ERROR */
  char *b = realloc(r->body, r->len + k + 1);
  if (!b) return 0;
  memcpy(b + r->len, p, k);
  r->body = b;
  r->len += k;
  b[r->len] = '\0';
  return k;
}

static const char *default_hint(long status, const ctl_opts *o, char *buf, size_t cap) {
  switch (status) {
  case 401:
    snprintf(buf, cap,
             "%s does not hold the control plane's admin token; it is <db>.admin-token next to the control "
             "plane's database unless it was started with --admin-token-file",
             o->token_file);
    return buf;
  case 404: return NULL;
  default: return NULL;
  }
}

static int status_exit_code(long status) {
  switch (status) {
  case 400: return FELIX_EXIT_USAGE;
  case 404: return FELIX_EXIT_NOT_FOUND;
  case 409:
  case 422: return FELIX_EXIT_REFUSED;
  default: return FELIX_EXIT_FAILURE;
  }
}

/* A non-2xx answer: print the server's error and hint. */
static int answer_error(const ctl_opts *o, const char *method, const char *path, const ctl_reply *r) {
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(r->json, "error");
  const cJSON *h = cJSON_GetObjectItemCaseSensitive(r->json, "hint");
  char hbuf[512];
  const char *hint = cJSON_IsString(h) && h->valuestring[0] ? h->valuestring : NULL;
  /* For 401 ours names the file used, which the server cannot know. */
  if (!hint || r->status == 401) hint = default_hint(r->status, o, hbuf, sizeof hbuf);
  int code = status_exit_code(r->status);
  if (cJSON_IsString(e) && e->valuestring[0]) return ctl_error(code, hint, "%s", e->valuestring);
  return ctl_error(code, hint, "the control plane answered %s %s with HTTP %ld%s%.200s", method, path, r->status,
                   r->len ? ": " : "", r->body ? r->body : "");
}

static int transport_error(const ctl_opts *o, CURLcode res, const char *errbuf, const ctl_reply *r) {
  if (res == CURLE_WRITE_ERROR && r->len > 0)
    return ctl_error(FELIX_EXIT_FAILURE, NULL, "the answer of the control plane at %s is larger than %u MiB",
                     o->control_plane, CTL_MAX_BODY >> 20);
  if (res == CURLE_OPERATION_TIMEDOUT)
    return ctl_error(FELIX_EXIT_UNREACHABLE, "is it overloaded or stopped? raise --timeout-ms to wait longer",
                     "the control plane at %s did not answer within %d ms", o->control_plane, o->timeout_ms);
  return ctl_error(FELIX_EXIT_UNREACHABLE,
                   "is felix-broker control-plane running there? set --control-plane URL, FELIX_CONTROL_PLANE or a "
                   "context (felixctl config use-context)",
                   "cannot reach the control plane at %s (from %s): %s", o->control_plane, o->control_plane_from,
                   errbuf[0] ? errbuf : curl_easy_strerror(res));
}

static CURLcode perform(const ctl_opts *o, const char *method, const char *url, const char *body,
                        const char *token, ctl_reply *out, char errbuf[CURL_ERROR_SIZE]) {
  CURL *h = curl_easy_init();
  if (!h) return CURLE_FAILED_INIT;
  char auth[CTL_MAX_TOKEN + 32];
  snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
  struct curl_slist *headers = curl_slist_append(NULL, auth);
  headers = curl_slist_append(headers, "Accept: application/json");
  if (body) headers = curl_slist_append(headers, "Content-Type: application/json");
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "felixctl/" FELIX_VERSION);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* curl's own SIGALRM would race our SIGINT handling */
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)o->timeout_ms);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)o->timeout_ms);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
  if (body) curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
  if (strcmp(method, "GET") && strcmp(method, "POST")) curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  CURLcode res = curl_easy_perform(h);
  if (res == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(h);
  return res;
}

int ctl_http(const ctl_opts *o, const char *method, const char *path, const char *body, ctl_reply *out) {
  if (ctl_watch_replaying()) return ctl_watch_replay_next(out);
  memset(out, 0, sizeof *out);
  char token[CTL_MAX_TOKEN];
  int rc = load_token(o, token, sizeof token);
  if (rc) return rc;
  size_t n = strlen(o->control_plane) + strlen(path) + 1;
  char *url = malloc(n);
  if (!url) return ctl_error(FELIX_EXIT_FAILURE, NULL, "out of memory");
  snprintf(url, n, "%s%s", o->control_plane, path);
  char errbuf[CURL_ERROR_SIZE] = "";
  CURLcode res = perform(o, method, url, body, token, out, errbuf);
  free(url);
  if (res != CURLE_OK) {
    rc = transport_error(o, res, errbuf, out);
    ctl_reply_free(out);
    return rc;
  }
  if (out->body) out->json = cJSON_ParseWithLength(out->body, out->len);
  if (out->status < 200 || out->status > 299) {
    rc = answer_error(o, method, path, out);
    ctl_reply_free(out);
    return rc;
  }
  if (!out->json) {
    ctl_reply_free(out);
    return ctl_error(FELIX_EXIT_FAILURE, "is --control-plane the control plane's address?",
                     "the control plane at %s answered %s %s with something that is not JSON", o->control_plane,
                     method, path);
  }
  ctl_watch_note_reply(out->json);
  return 0;
}
