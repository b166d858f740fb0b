/* nats-client — the campaign's NATS JetStream client (PEER=nats), on the
 * NATS C client (Debian libnats-dev). The campaign's Python harness drives
 * it over a pipe, one command per line, so that a NATS run records every
 * acknowledgement with its sequence and content exactly as a Felix run
 * records offsets (tests/campaign/natspeer.py, docs/campaign.md).
 *
 *   nats-client create SERVERS STREAM SUBJECT REPLICAS
 *   nats-client publish SERVERS SUBJECT WAIT_MS
 *       stdin: "B N" then N records, one per line (a batch, as one Felix
 *       PUBLISH carries several records: published asynchronously, all in
 *       flight at once); stdout per record, in the order the acknowledgements
 *       came: "ok SEQ RECORD" or "err RECORD TEXT" (failed or not
 *       acknowledged within WAIT_MS: unknown, never re-sent), then "end"
 *   nats-client read SERVERS STREAM WAIT_MS
 *       stdin: "FROM MAX" per line; stdout: "hwm LAST_SEQ FIRST_SEQ", then
 *       "msg SEQ CONTENT" or "gone SEQ" for FROM .. min(LAST, FROM+MAX-1),
 *       then "end"; "err TEXT" when the stream could not be asked
 *
 * SERVERS is a comma-separated list of nats:// URLs; the client reconnects
 * to any of them for ever.
 */
#include <nats/nats.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static natsConnection *nc;
static jsCtx *js;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER; /* acks are printed from the library's thread */
static int64_t wait_ms = 5000;

static void on_ack(jsCtx *ctx, natsMsg *m, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
    (void)ctx, (void)closure;
    pthread_mutex_lock(&out_lock);
    if (pa)
        printf("ok %" PRIu64 " %.*s\n", pa->Sequence, natsMsg_GetDataLength(m), natsMsg_GetData(m));
    else
        printf("err %.*s %s/%d\n", natsMsg_GetDataLength(m), natsMsg_GetData(m),
               pae ? natsStatus_GetText(pae->Err) : "unknown", pae ? (int)pae->ErrCode : 0);
    pthread_mutex_unlock(&out_lock);
    natsMsg_Destroy(m);
}

static void die(const char *what, natsStatus s)
{
    fprintf(stderr, "nats-client: %s: %s\n", what, natsStatus_GetText(s));
    exit(1);
}

static void connect_all(char *servers)
{
    const char *urls[16];
    int n = 0;
    for (char *tok = strtok(servers, ","); tok && n < 16; tok = strtok(NULL, ","))
        urls[n++] = tok;
    natsOptions *o;
    natsStatus s = natsOptions_Create(&o);
    if (s == NATS_OK) s = natsOptions_SetServers(o, urls, n);
    if (s == NATS_OK) s = natsOptions_SetTimeout(o, wait_ms);
    if (s == NATS_OK) s = natsOptions_SetMaxReconnect(o, -1);
    if (s == NATS_OK) s = natsOptions_SetReconnectWait(o, 200);
    if (s == NATS_OK) s = natsOptions_SetRetryOnFailedConnect(o, true, NULL, NULL);
    if (s == NATS_OK) s = natsConnection_Connect(&nc, o);
    if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED) die("connect", s);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = wait_ms;
    jo.PublishAsync.AckHandler = on_ack;
    jo.PublishAsync.MaxPending = 4096;
    s = natsConnection_JetStream(&js, nc, &jo);
    if (s != NATS_OK) die("jetstream", s);
    natsOptions_Destroy(o);
}

static void chomp(char *line)
{
    line[strcspn(line, "\r\n")] = 0;
}

static int do_create(const char *stream, const char *subject, int replicas)
{
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = stream;
    const char *subjects[1] = {subject};
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.Replicas = replicas;
    jsStreamInfo *si = NULL;
    jsErrCode je = 0;
    natsStatus s = js_AddStream(&si, js, &sc, NULL, &je);
    if (s != NATS_OK) {
        fprintf(stderr, "nats-client: create %s: %s (%d) %s\n", stream, natsStatus_GetText(s), (int)je, nats_GetLastError(NULL));
        return 1;
    }
    jsStreamInfo_Destroy(si);
    return 0;
}

/* One batch: every record in flight, then each one's outcome. */
static void publish_batch(const char *subject, int n)
{
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = wait_ms; /* each record's acknowledgement, or its error */
    char line[4096];
    for (int i = 0; i < n && fgets(line, sizeof line, stdin); i++) {
        chomp(line);
        natsStatus s = js_PublishAsync(js, subject, line, (int)strlen(line), &po);
        if (s != NATS_OK) {
            pthread_mutex_lock(&out_lock);
            printf("err %s %s/0\n", line, natsStatus_GetText(s));
            pthread_mutex_unlock(&out_lock);
        }
    }
    po.MaxWait = wait_ms + 2000;
    if (js_PublishAsyncComplete(js, &po) != NATS_OK) {
        natsMsgList left = {0};
        if (js_PublishAsyncGetPendingList(&left, js) == NATS_OK) {
            pthread_mutex_lock(&out_lock);
            for (int i = 0; i < left.Count; i++)
                printf("err %.*s timeout/0\n", natsMsg_GetDataLength(left.Msgs[i]), natsMsg_GetData(left.Msgs[i]));
            pthread_mutex_unlock(&out_lock);
            natsMsgList_Destroy(&left);
        }
    }
    pthread_mutex_lock(&out_lock);
    printf("end\n");
    fflush(stdout);
    pthread_mutex_unlock(&out_lock);
}

static int do_publish(const char *subject)
{
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        int n;
        if (sscanf(line, "B %d", &n) != 1 || n < 1 || n > 4096) {
            fprintf(stderr, "nats-client: publish: bad command %s", line);
            return 2;
        }
        publish_batch(subject, n);
    }
    return 0;
}

static void read_range(const char *stream, uint64_t from, uint64_t max)
{
    jsStreamInfo *si = NULL;
    jsErrCode je = 0;
    natsStatus s = js_GetStreamInfo(&si, js, stream, NULL, &je);
    if (s != NATS_OK) {
        printf("err %s/%d\n", natsStatus_GetText(s), (int)je);
        return;
    }
    uint64_t last = si->State.LastSeq, first = si->State.FirstSeq;
    jsStreamInfo_Destroy(si);
    printf("hwm %" PRIu64 " %" PRIu64 "\n", last, first);
    for (uint64_t q = from; q <= last && q < from + max; q++) {
        natsMsg *m = NULL;
        s = js_GetMsg(&m, js, stream, q, NULL, &je);
        if (s == NATS_OK)
            printf("msg %" PRIu64 " %.*s\n", q, natsMsg_GetDataLength(m), natsMsg_GetData(m));
        else if (s == NATS_NOT_FOUND)
            printf("gone %" PRIu64 "\n", q);
        else {
            printf("err %s/%d\n", natsStatus_GetText(s), (int)je);
            natsMsg_Destroy(m);
            return;
        }
        natsMsg_Destroy(m);
    }
    printf("end\n");
}

static int do_read(const char *stream)
{
    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        uint64_t from, max;
        if (sscanf(line, "%" SCNu64 " %" SCNu64, &from, &max) != 2) {
            fprintf(stderr, "nats-client: read: bad command %s", line);
            return 2;
        }
        read_range(stream, from, max);
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: nats-client create|publish|read SERVERS ...\n");
        return 2;
    }
    const char *mode = argv[1];
    if (!strcmp(mode, "publish") && argc == 5) wait_ms = atoll(argv[4]);
    else if (!strcmp(mode, "read") && argc == 5) wait_ms = atoll(argv[4]);
    else if (strcmp(mode, "create") || argc != 6) {
        fprintf(stderr, "nats-client: bad arguments for %s\n", mode);
        return 2;
    }
    connect_all(argv[2]);
    int rc;
    if (!strcmp(mode, "create")) rc = do_create(argv[3], argv[4], atoi(argv[5]));
    else if (!strcmp(mode, "publish")) rc = do_publish(argv[3]);
    else rc = do_read(argv[3]);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    nats_Close();
    return rc;
}
