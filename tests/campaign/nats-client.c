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
 *   nats-client read SERVERS STREAM SUBJECT WAIT_MS
 *       stdin: "FROM MAX" per line; stdout: "hwm LAST_SEQ FIRST_SEQ LEADER"
 *       (LEADER "-" when the stream has none: then every replica answers
 *       with its own last sequence, so the HWM is no stream's), then
 *       "msg SEQ CONTENT" for each record of FROM .. UPTO = min(LAST,
 *       FROM+MAX-1) the stream holds, then "end UPTO" (a sequence not
 *       listed is gone); "err TEXT" when the stream could not be asked or the
 *       range not read. The range is read by an ordered consumer from FROM
 *       (one request a batch, not one a record); a sequence it does not
 *       deliver is gone from the stream
 *
 * SERVERS is a comma-separated list of nats:// URLs; the client reconnects
 * to any of them for ever.
 */
#include <nats/nats.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
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
    /* a dead or cut-off server is noticed within seconds, as Felix's
     * clients notice theirs, not after the 2-minute default ping */
    if (s == NATS_OK) s = natsOptions_SetTimeout(o, 1000);
    if (s == NATS_OK) s = natsOptions_SetPingInterval(o, 1000);
    if (s == NATS_OK) s = natsOptions_SetMaxPingsOut(o, 2);
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

/* The consumer's server says nothing is left for it to deliver. */
static bool nothing_pending(natsSubscription *sub)
{
    jsConsumerInfo *ci = NULL;
    jsErrCode je = 0;
    if (natsSubscription_GetConsumerInfo(&ci, sub, NULL, &je) != NATS_OK) return false;
    bool none = ci->NumPending == 0;
    jsConsumerInfo_Destroy(ci);
    return none;
}

/* Prints "msg SEQ RECORD" for every record the stream holds in
 * [from, upto]; false (and an "err" line) if they did not all come. */
static bool read_ordered(const char *stream, const char *subject, uint64_t from, uint64_t upto)
{
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Ordered = true;
    so.Config.DeliverPolicy = js_DeliverByStartSequence;
    so.Config.OptStartSeq = from;
    natsSubscription *sub = NULL;
    jsErrCode je = 0;
    natsStatus s = js_SubscribeSync(&sub, js, subject, NULL, &so, &je);
    uint64_t seen = from - 1;
    while (s == NATS_OK && seen < upto) {
        natsMsg *m = NULL;
        s = natsSubscription_NextMsg(&m, sub, wait_ms);
        if (s == NATS_TIMEOUT && nothing_pending(sub)) {
            s = NATS_OK; /* the server has nothing at or after `seen`: the rest is gone */
            break;
        }
        if (s != NATS_OK) break;
        jsMsgMetaData *meta = NULL;
        if (natsMsg_GetMetaData(&meta, m) == NATS_OK) {
            seen = meta->Sequence.Stream;
            if (seen <= upto)
                printf("msg %" PRIu64 " %.*s\n", seen, natsMsg_GetDataLength(m), natsMsg_GetData(m));
            if (meta->NumPending == 0) seen = upto; /* nothing after it: the rest is gone */
            jsMsgMetaData_Destroy(meta);
        }
        natsMsg_Destroy(m);
    }
    if (sub) {
        natsSubscription_Unsubscribe(sub); /* deletes the ephemeral consumer */
        natsSubscription_Destroy(sub);
    }
    if (s != NATS_OK) {
        printf("err %s/%d\n", natsStatus_GetText(s), (int)je);
        return false;
    }
    return true;
}

static void read_range(const char *stream, const char *subject, uint64_t from, uint64_t max)
{
    jsStreamInfo *si = NULL;
    jsErrCode je = 0;
    natsStatus s = js_GetStreamInfo(&si, js, stream, NULL, &je);
    if (s != NATS_OK) {
        printf("err %s/%d\n", natsStatus_GetText(s), (int)je);
        return;
    }
    uint64_t last = si->State.LastSeq, first = si->State.FirstSeq;
    const char *leader = si->Cluster && si->Cluster->Leader && si->Cluster->Leader[0] ? si->Cluster->Leader : "-";
    printf("hwm %" PRIu64 " %" PRIu64 " %s\n", last, first, leader);
    int led = strcmp(leader, "-") != 0;
    jsStreamInfo_Destroy(si);
    if (!led) {
        printf("end %" PRIu64 "\n", from - 1);
        return;
    }
    uint64_t upto = last < from + max - 1 ? last : from + max - 1;
    if (from <= upto && !read_ordered(stream, subject, from, upto)) return;
    printf("end %" PRIu64 "\n", from <= upto ? upto : from - 1);
}

static int do_read(const char *stream, const char *subject)
{
    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        uint64_t from, max;
        if (sscanf(line, "%" SCNu64 " %" SCNu64, &from, &max) != 2) {
            fprintf(stderr, "nats-client: read: bad command %s", line);
            return 2;
        }
        read_range(stream, subject, from, max);
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
    else if (!strcmp(mode, "read") && argc == 6) wait_ms = atoll(argv[5]);
    else if (strcmp(mode, "create") || argc != 6) {
        fprintf(stderr, "nats-client: bad arguments for %s\n", mode);
        return 2;
    }
    connect_all(argv[2]);
    int rc;
    if (!strcmp(mode, "create")) rc = do_create(argv[3], argv[4], atoi(argv[5]));
    else if (!strcmp(mode, "publish")) rc = do_publish(argv[3]);
    else rc = do_read(argv[3], argv[4]);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    nats_Close();
    return rc;
}
