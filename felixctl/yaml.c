/* yaml.c — -o yaml: the control plane's JSON answer as a YAML document,
 * emitted by libyaml (the Debian library for the job). Strings that a YAML
 * 1.1 reader would take for another type ("true", "no", "12", "~", "") are
 * quoted; everything else is plain, as kubectl prints. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "felixctl.h"

/* Whether s, unquoted, reads back as the same string. */
static bool plain_ok(const char *s) {
  static const char *const words[] = {"y", "n", "yes", "no", "true", "false", "on", "off", "null", "~", NULL};
  if (!s[0] || isdigit((unsigned char)s[0]) || strchr("-+.", s[0])) return false;
  for (int i = 0; words[i]; i++)
    if (!strcasecmp(s, words[i])) return false;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if (!isalnum(*p) && !strchr("_-./@", *p) && !(*p == ':' && p[1] && p[1] != ' ')) return false;
  return true;
}

static int scalar(yaml_emitter_t *e, const char *text, bool is_string) {
  yaml_event_t ev;
  bool plain = !is_string || plain_ok(text);
  yaml_scalar_event_initialize(&ev, NULL, (yaml_char_t *)YAML_STR_TAG, (yaml_char_t *)text, (int)strlen(text), plain, 1,
                               plain ? YAML_PLAIN_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
  return yaml_emitter_emit(e, &ev);
}

static int node(yaml_emitter_t *e, const cJSON *v) {
  yaml_event_t ev;
  char num[64];
  if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
    bool obj = cJSON_IsObject(v);
    if (obj) yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
    else yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE);
    if (!yaml_emitter_emit(e, &ev)) return 0;
    for (const cJSON *c = v->child; c; c = c->next)
      if ((obj && !scalar(e, c->string, true)) || !node(e, c)) return 0;
    if (obj) yaml_mapping_end_event_initialize(&ev);
    else yaml_sequence_end_event_initialize(&ev);
    return yaml_emitter_emit(e, &ev);
  }
  if (cJSON_IsString(v)) return scalar(e, v->valuestring, true);
  if (cJSON_IsBool(v)) return scalar(e, cJSON_IsTrue(v) ? "true" : "false", false);
  if (cJSON_IsNumber(v)) return scalar(e, ctl_number_text(v, num), false);
  return scalar(e, "null", false);
}

static int write_out(void *ctx, unsigned char *buf, size_t n) { return fwrite(buf, 1, n, ctx) == n; }

int ctl_print_yaml(const cJSON *v) {
  yaml_emitter_t e;
  yaml_event_t ev;
  if (!yaml_emitter_initialize(&e)) return ctl_error(FELIX_EXIT_FAILURE, NULL, "out of memory");
  yaml_emitter_set_output(&e, write_out, stdout);
  yaml_emitter_set_unicode(&e, 1);
  yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
  int ok = yaml_emitter_emit(&e, &ev);
  yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
  ok = ok && yaml_emitter_emit(&e, &ev) && node(&e, v);
  yaml_document_end_event_initialize(&ev, 1);
  ok = ok && yaml_emitter_emit(&e, &ev);
  yaml_stream_end_event_initialize(&ev);
  ok = ok && yaml_emitter_emit(&e, &ev);
  yaml_emitter_delete(&e);
  return ok ? FELIX_EXIT_OK : ctl_error(FELIX_EXIT_FAILURE, NULL, "cannot write YAML: %s", e.problem ? e.problem : "?");
}

void ctl_print_reply(const ctl_opts *o, const ctl_reply *r) {
  if (o->format == CTL_YAML) ctl_print_yaml(r->json);
  else ctl_print_body(r);
}
