/*
 * shard.pml -- one replicated Felix shard (three brokers, one control plane,
 * one to NV client writes), checked with spin.
 *
 * Mirrors ../../shared DESIGN.md sections 3.2-3.4 and 4 (see README.md in this
 * folder for the action-by-action explanation).  One file serves every
 * configuration: faults are enabled and bounded with -D macros (MAX_*), and
 * each fix can be removed with one -D macro (the violating twins).
 *
 * Every action is one d_step, so every stored state is a state "between"
 * protocol steps; the invariants are checked in every state by an observer
 * (process invariants: enabled only in a violating state), i.e. in every reachable state.
 *
 * Fix switches (defining one REMOVES that fix):
 *   NO_ID_CHECK_IN_PLACEMENT  NO_ROTATE_ON_CRASH   NO_LEADER_GIVES_UP
 *   BLIND_RECLAIM             FENCE_COUNTS_ANY     NO_CURSOR_RESET
 *   RANK_BY_OFFSET            PIN_BY_REGISTRATION  RESTART_RESUMES_GEN
 *   RECLAIM_NO_MAJORITY       HWM_OLD_GEN          SHORTCUT_NO_ACTIVE
 *   NO_COPY_ID                GEN_FROM_STORE       ACK_WITHOUT_OWN_COPY
 *   STRANGER_NOT_ACTIVE       OLD_LEADER_APPENDS   NO_GEN_START_RECORD
 *   NO_BOOT_TOKEN             NEW_LEADER_OWN_HWM   ONCOMMIT_NO_TOKEN
 *   NO_CID_BIND               NO_FLOOR_CHECK       REFENCE_SERVED_GEN (Finding 4)
 *   WAIT_ANY_COPY  BALLOT_WHILE_WAITING  REPORT_WHILE_WAITING  PROMISE_ANY_INSTANCE (Finding 6)
 *   TOKEN_AFTER_ERROR (review 5, item 4: the boot token goes some time after a failed sync)
 *   STALE_FENCE_MEMBERS (review 5, item 7: a fence counts against a newer assignment's members)
 *   NO_KEEP_GUARD (review 5, item 7: the copy an abandon keeps accepts a cut below what it keeps)
 *   NQ_MOVE_AT_ONCE (review 5, item 6: a no-quorum report moves the shard while the leader's
 *     acks=leader lease may still run)
 *   STALE_FOLLOWER_HWM (review 5, item 3: the HWM a follower learned survives truncation,
 *     a new leader keeps it, a report beyond the log is accepted, acks follow the HWM)
 *   READS_BEFORE_START (issue 14: a new leader answers fetches before its generation-start
 *     record is committed, with the HWM it starts from)
 *   Retention (issue 16, MAX_TRIM > 0): TRIM_ABOVE_HWM (a leader's log start passes its
 *     HWM), RESUME_AT_START (a copy whose cut lies below the source's log start is cut to
 *     that log start, keeping its own records below it, instead of starting over there),
 *     FOLLOWER_OWN_RETENTION (a follower applies retention by its own measure, not the
 *     leader's log start)
 * (STRANGER_NOT_ACTIVE and NEW_LEADER_OWN_HWM are redundant with the other rules:
 *  README.md, "Rules the model shows redundant".)
 *
 * Bounds: MAX_<fault> and <fault>_MASK (CRASH, KILL, WIPE, DEL, SE, PART, LAPSE),
 * MAX_LOSTSID, MAX_RSI, MAX_ROLL, MAX_CPR, MAX_RACK, MAX_DRAIN, MAX_ABANDON, MAX_TRIM, MAX_FAULTS, NV, MAXG,
 * L; SNAP_MAXG (when the backup a rollback restores may be taken; 0 = at stream
 * creation); RSI_BELOW_FLOOR (a hand restore loses only records below the copy's
 * floor, Finding 5).
 */

/* Action coverage (run.sh, README.md "Action coverage"): an action is a branch of
 * init's do-loop, a call of an inline whose body is one d_step; COVER(Name) is
 * that d_step's first statement after its guard.  It prints "COVER Name" to pan's
 * stdout the first time its call site runs.  The flag is a C static, outside the
 * state vector: the marker costs no state (a replay, spin -t, only echoes it). */
c_code {
  /* names already printed: an action has up to six call sites (PER_LF) */
  static const char *cov_name[64]; static int cov_names;
  static void cov_print(const char *a) {
    int i;
    for (i = 0; i < cov_names; i++) { if (strcmp(cov_name[i], a) == 0) { return; } }
    if (cov_names < 64) { cov_name[cov_names++] = a; }
    printf("COVER %s\n", a); fflush(stdout);
  }
}
#define COVER(A) c_code { static char cov_; if (!cov_) { cov_ = 1; cov_print(#A); } }

#define N    3
#define MAJ  2
#ifndef L
#define L    3          /* log capacity per copy */
#endif
#ifndef NV
#define NV   2          /* client writes (values 1..NV) */
#endif
#ifndef MAXG
#define MAXG 3          /* highest generation the control plane may issue */
#endif
#define NONE  255
#define NOBAD 255

/* fault bounds: 0 disables the fault */
#ifndef MAX_CRASH
#define MAX_CRASH 0     /* machine power loss (keeps the directory) */
#endif
#ifndef CRASH_MASK
#define CRASH_MASK 7    /* which brokers may crash (bit per broker) */
#endif
#ifndef MAX_LOSTSID
#define MAX_LOSTSID 0   /* power loss that also loses the storage-id file */
#endif
#ifndef MAX_KILL
#define MAX_KILL 0      /* process kill, same boot */
#endif
#ifndef KILL_MASK
#define KILL_MASK 7
#endif
#ifndef MAX_WIPE
#define MAX_WIPE 0
#endif
#ifndef WIPE_MASK
#define WIPE_MASK 7
#endif
#ifndef MAX_DEL
#define MAX_DEL 0       /* DeleteShardDir */
#endif
#ifndef DEL_MASK
#define DEL_MASK 7
#endif
#ifndef MAX_LAPSE
#define MAX_LAPSE 0     /* lease lapses of a live, connected broker (pauses) */
#endif
#ifndef LAPSE_MASK
#define LAPSE_MASK 7    /* which live brokers may pause (a cut or down broker's lease always may lapse) */
#endif
#ifndef MAX_PART
#define MAX_PART 0      /* partitions (a broker cut from everyone) */
#endif
#ifndef PART_MASK
#define PART_MASK 7     /* which brokers may be partitioned */
#endif
#ifndef MAX_CPR
#define MAX_CPR 0       /* control-plane restarts */
#endif
#ifndef MAX_ROLL
#define MAX_ROLL 0      /* control-plane rollbacks to an older snapshot */
#endif
#ifndef SNAP_MAXG
#define SNAP_MAXG MAXG  /* the backup a rollback restores is taken while cgen <= SNAP_MAXG */
#endif
#ifndef MAX_RSI
#define MAX_RSI 0       /* RollbackSameIds: a shard directory restored by hand */
#endif
#ifndef MAX_SE
#define MAX_SE 0        /* sync errors */
#endif
#ifndef SE_MASK
#define SE_MASK 7
#endif
#ifndef MAX_RACK
#define MAX_RACK 0      /* whole-rack power loss: every live broker at once */
#endif
#ifndef MAX_DRAIN
#define MAX_DRAIN 0     /* drain hand-offs */
#endif
#ifndef MAX_ABANDON
#define MAX_ABANDON 0   /* operator's placement abandon (review 5, item 3) */
#endif
#ifndef MAX_BWF
#define MAX_BWF 0       /* failed writes of a follower's ballot (review 5, item 5) */
#endif
#ifndef MAX_NQ
#define MAX_NQ 0        /* no-quorum reports of an Active leader (review 5, item 6) */
#endif
#ifndef MAX_FAULTS
#define MAX_FAULTS 255  /* total budget over all fault kinds */
#endif
#ifndef MAX_TRIM
#define MAX_TRIM 0      /* retention: how often a leader may move its log start (issue 16); not a fault */
#endif

#ifdef ONCOMMIT
#define MODE(b) 1
#else
#ifdef MIXED
#define MODE(b) ((b) == 0)   /* broker 0 (first leader) on_commit, others periodic */
#else
#define MODE(b) 0            /* periodic everywhere: the mode Felix ships */
#endif
#endif

#define E(vg,v)  ((vg)*8+(v))
#define GEN(vx)  ((vx)/8)
#define VAL(vx)  ((vx)%8)
/* under periodic the synced prefix matters only to power loss and sync errors */
#if defined(ONCOMMIT) || defined(MIXED)
#define NEEDSYNC 1
#else
#define NEEDSYNC (MAX_CRASH + MAX_SE + MAX_LOSTSID + MAX_RACK > 0)
#endif
#define BIT(b)  (1<<(b))

typedef Br {
  byte e[L];            /* log: (generation, value); value 0 = generation-start record */
  byte ln;              /* written log end (what the page cache shows) */
  byte syn;             /* synced prefix */
  byte bad;             /* sync error: entries from here on are clean-but-lost pages */
  byte sid;             /* storage id of the data directory */
  byte cid;             /* copy id of the shard directory */
  byte bsid;            /* storage id the copy id was made under (ballot) */
  byte inc;             /* incarnation of the running process, 0 = down */
  bit tok;              /* boot token present */
  bit rot;              /* next start rotates the storage id (identity decision) */
  bit lostsid;          /* the storage-id file is gone */
  bit cut;              /* partitioned from everyone */
  byte bgen; byte bl; byte blcid; byte blinc;   /* ballot: promise + leader process */
  byte lg;              /* generation this process leads / fences for */
  byte ph;              /* 0 none, 1 fencing, 2 serving */
  byte hwm;             /* HWM (leader) / HWM learned from the leader (follower) */
  byte mark;            /* offset of own generation-start record */
#if MAX_ROLL > 0
  byte srv;             /* highest generation this process has served (Finding 4) */
  byte ci;              /* control-plane instance this copy last sent its inventory to */
  byte fin;             /* fence: instance of the assignment it runs under (Finding 6) */
#endif
  byte cur[N];          /* per-follower cursor (held offsets confirmed) */
  byte ccid[N];         /* copy id the cursor was measured under */
  byte cinc[N];         /* incarnation of the live connection, 0 = none */
  byte h0[N];           /* HWM when this leader first saw that copy id */
  byte prom; byte cnt;  /* fence: promised / counted bitmasks */
  byte acid[N];         /* fence: copy id of each answer */
  byte agen[N]; byte alen[N];   /* fence: rank of each answer */
  bit rcl;              /* this fence is a reclaim */
#ifdef TOKEN_AFTER_ERROR
  bit pend;             /* a failed sync not yet acted on (the twin: token and exit come later) */
#endif
  byte fmh;             /* fence: the maximum HWM its assignment carried (review 5, item 7) */
#if MAX_ABANDON > 0
  byte keep;            /* this process leads the copy an abandon kept: what it keeps (in memory) */
#endif
#ifdef FAILED_WRITE_KEEPS_MEMORY
  bit wf;               /* the twin: a ballot write failed; the file keeps db* until the process restarts */
  byte dbgen; byte dbl; byte dblcid; byte dblinc;
#endif
  byte fcid[N]; byte ffl[N];   /* fence: the copy ids and floors its assignment named (item 7) */
#if MAX_TRIM > 0
  byte ls;              /* log start (issue 16): offsets below it are deleted by retention.  The
                           entries below stay in e[] as ghosts (the generation lines the code
                           keeps): the rank and the divergence point read them, nothing serves them */
#endif
}
Br br[N];

/* ---- control plane ---- */
byte cgen;                       /* current generation */
byte pl[MAXG+1];                 /* pinned leader broker per generation */
byte pcid[MAXG+1];               /* pinned leader copy id per generation */
byte pinc[MAXG+1];               /* pinned leader incarnation per generation */
bit  act[MAXG+1];                /* generation Active */
byte prevg;                      /* generation placed before the current one */
byte regcid[N]; byte reginc[N];  /* registrations (slot copy id, incarnation) */
bit  lease[N];
bit  strg[N];                    /* slot is a stranger */
byte mcid[N]; byte mlen[N]; byte mgen[N];   /* newest trusted measurement */
byte fl[N];                      /* floors */
byte icid[N]; byte ilen[N]; byte igen[N];   /* inventories */
byte maxhwm; byte hwmgen;
byte seen;                       /* highest generation seen in ballots/inventories/refusals */
byte asgcid[N]; byte asgfl[N];   /* assignment of the current generation */
bit  cpwait; byte invm; byte invk;   /* after a restart: waiting for inventories (sent, counted) */
bit  drain; bit ftmo; bit rclg;
bit  abg;                        /* the current generation was issued by an abandon: its fence adopts the chosen copy only */
/* snapshot for Rollback (only in configurations that may roll back) */
#if MAX_ROLL > 0
byte s_cgen; byte s_pl[MAXG+1]; byte s_pcid[MAXG+1]; byte s_pinc[MAXG+1]; bit s_act[MAXG+1];
byte s_regcid[N]; byte s_reginc[N]; bit s_strg[N]; byte s_mcid[N]; byte s_mlen[N];
byte s_mgen[N]; byte s_fl[N]; byte s_maxhwm; byte s_hwmgen; byte s_seen;
byte s_asgcid[N]; byte s_asgfl[N]; byte s_prevg;
byte cpi;                        /* control-plane instance (a new one at each restore) */
byte asgi; byte s_asgi;          /* instance that made the current assignment */
#endif

/* ---- id counters (a new value is never reused) ---- */
byte incctr = N; byte cidctr = N; byte sidctr = N;

/* ---- ghost state for the invariants ---- */
byte acked[NV+1];                /* generation a value was acknowledged in, 0 = not */
byte ackinc[MAXG+1];             /* incarnation of the process acknowledging in g */
byte chwm;                       /* highest HWM any leader ever exposed */
byte clog[L]; byte cgat[L];      /* the records exposed, and the generation exposing them */
#if MAX_ROLL > 0
bit  rbx[L];                     /* the exception DESIGN.md rule 3 admits: offsets whose acceptance
                                    (maximum HWM) a control-plane rollback erased, until exposed again */
#define RBX(k) rbx[k]
#else
#define RBX(k) 0
#endif
byte nextv = 1;
#if MAX_TRIM > 0
byte gtrim;                      /* the highest log start any copy took: offsets below are gone by retention */
byte ntrim;
#define LS(b) br[b].ls
#else
#define LS(b) 0
#endif
byte abgen;                      /* the generation the last abandon issued (0: none) */

/* ---- fault counters ---- */
byte nfault, nrack, ncrash, nlost, nkill, nwipe, ndel, nlapse, npart, ncpr, nroll, nsnap, nrsi, nse, ndrain, naband, nbwf;
#if MAX_NQ > 0
/* Review 5, item 6: the per-shard lease under which a leader acknowledges
   acks=leader publishes on its own copy (renewed by heartbeat replies while it
   is the Active pinned leader), and the control plane's no-quorum state: it
   stopped renewing that lease after the leader reported no quorum. */
bit llease[N];
bit nq; bit nqp; byte nnq;   /* nqp: a lease has passed on the control plane's clock since renewals stopped */
#define LLEASE(b) llease[b]
#else
#define LLEASE(b) 0
#endif

hidden byte vi, vj, vk, vt, vs, vc, vg, vx, vy, tn, ca, cb;

#define UP(b)     (br[b].inc != 0)
#define HELD(b)   (MODE(b) -> br[b].syn : br[b].ln)
#define RGEN(b)   (HELD(b) > 0 -> GEN(br[b].e[HELD(b)-1]) : 0)
#define OWNB(b)   (br[b].bgen == br[b].lg && br[b].bl == b && br[b].blcid == br[b].cid && br[b].blinc == br[b].inc)
#ifdef OLD_LEADER_APPENDS
#define LEADS(b)  (UP(b) && br[b].ph == 2)
#else
#define LEADS(b)  (UP(b) && br[b].ph == 2 && OWNB(b))
#endif
#define FAULT     (nfault < MAX_FAULTS)
#define NAMES(f,l) (br[f].bl == l && br[f].blcid == br[l].cid && br[f].blinc == br[l].inc)
#define CONN(l,f) (br[l].cinc[f] == br[f].inc && br[l].ccid[f] == br[f].cid)
/* the floor check (§4.5, §4.7): inventory, measurement and fence answer below the floor */
#ifdef NO_FLOOR_CHECK
#define BELOWFL(n, f) 0
#else
#define BELOWFL(n, f) ((n) < (f))
#endif
#ifdef FENCE_COUNTS_ANY
#define COUNTS(l, r) 1
#else
/* review 5, item 7: a fence counts an answer only against the members of its own
   generation's assignment, bound when it starts (FCID/FFL); the twin reads the
   newest assignment's, as apply_members once handed them to a running fence */
#ifdef STALE_FENCE_MEMBERS
#define FCID(l, r) asgcid[r]
#define FFL(l, r) asgfl[r]
#else
#define FCID(l, r) br[l].fcid[r]
#define FFL(l, r) br[l].ffl[r]
#endif
#define COUNTS(l, r) (FCID(l, r) == br[r].cid && !BELOWFL(HELD(r), FFL(l, r)))
#endif

#define POP(m) (((m)&1) + (((m)>>1)&1) + (((m)>>2)&1))

/* ---------------- invariants ---------------- */
#define INV_HAS1(x,vv,kk) (kk >= LS(x) && kk < br[x].ln && VAL(br[x].e[kk]) == vv && GEN(br[x].e[kk]) > 0)
#if L >= 4
#define INV_HAS(x,vv) (INV_HAS1(x,vv,0) || INV_HAS1(x,vv,1) || INV_HAS1(x,vv,2) || INV_HAS1(x,vv,3))
#else
#define INV_HAS(x,vv) (INV_HAS1(x,vv,0) || INV_HAS1(x,vv,1) || INV_HAS1(x,vv,2))
#endif
/* retention (issue 16): a value whose committed offset lies below the highest log
   start any copy took is gone by policy, not lost (TrimmedCommitted keeps that
   below the committed records) */
#if MAX_TRIM > 0
#define TRIMMED1(vv,kk) (kk < gtrim && VAL(clog[kk]) == vv && GEN(clog[kk]) > 0)
#if L >= 4
#define TRIMMED(vv) (TRIMMED1(vv,0) || TRIMMED1(vv,1) || TRIMMED1(vv,2) || TRIMMED1(vv,3))
#else
#define TRIMMED(vv) (TRIMMED1(vv,0) || TRIMMED1(vv,1) || TRIMMED1(vv,2))
#endif
#else
#define TRIMMED(vv) 0
#endif
#define INV_AV(x,vv) (acked[vv] == 0 || acked[vv] > br[x].lg || INV_HAS(x,vv) || TRIMMED(vv))
#if NV >= 4
#define INV_ACK(x) (INV_AV(x,1) && INV_AV(x,2) && INV_AV(x,3) && INV_AV(x,4))
#elif NV >= 3
#define INV_ACK(x) (INV_AV(x,1) && INV_AV(x,2) && INV_AV(x,3))
#elif NV >= 2
#define INV_ACK(x) (INV_AV(x,1) && INV_AV(x,2))
#else
#define INV_ACK(x) (INV_AV(x,1))
#endif
#define ACTIVEPIN(x) (act[br[x].lg] && pl[br[x].lg] == x && pinc[br[x].lg] == br[x].inc)
#define INV_CK(x,kk) (!(kk < chwm && cgat[kk] <= br[x].lg && !RBX(kk)) || \
                      kk < LS(x) || (kk < br[x].ln && br[x].e[kk] == clog[kk] && !(ACTIVEPIN(x) && kk >= br[x].hwm)))
#if L >= 4
#define INV_COMMIT(x) (INV_CK(x,0) && INV_CK(x,1) && INV_CK(x,2) && INV_CK(x,3))
#else
#define INV_COMMIT(x) (INV_CK(x,0) && INV_CK(x,1) && INV_CK(x,2))
#endif
/* HwmNotBelowMax (review 5, item 8): the current generation's pinned leader never
   shows consumers an HWM below the maximum HWM the control plane has accepted */
#define CURPIN(x) (br[x].lg == cgen && pl[cgen] == x && pcid[cgen] == br[x].cid && pinc[cgen] == br[x].inc)
#define INV_HWMMAX(x) (!CURPIN(x) || br[x].hwm >= maxhwm)
/* LeaderAcksExclusive (review 5, item 6): no process acknowledges acks=leader
   publishes on its own copy (serving under its per-shard lease) while a
   process of a newer generation serves */
#define NEWER_SERVES(x) ((LEADS(0) && br[0].lg > br[x].lg) || (LEADS(1) && br[1].lg > br[x].lg) || \
                         (LEADS(2) && br[2].lg > br[x].lg))
#define INV_LACK(x) (!LLEASE(x) || !NEWER_SERVES(x))
/* ReadsNeverStepBack (issue 14): the current generation's pinned leader
   answers fetches only once its start record is committed (hwm > mark); the
   HWM it then shows covers every record any leader exposed, so no consumer
   sees an HWM step back across a failover */
#ifdef READS_BEFORE_START
#define READS(x) 1
#else
#define READS(x) (br[x].mark != NONE && br[x].hwm > br[x].mark)
#endif
#define INV_RK(x,kk) (!(kk < chwm && cgat[kk] <= br[x].lg && !RBX(kk)) || kk < br[x].hwm)
#if L >= 4
#define INV_READS(x) (!(CURPIN(x) && READS(x)) || (INV_RK(x,0) && INV_RK(x,1) && INV_RK(x,2) && INV_RK(x,3)))
#else
#define INV_READS(x) (!(CURPIN(x) && READS(x)) || (INV_RK(x,0) && INV_RK(x,1) && INV_RK(x,2)))
#endif
#define INV_OK(x) (!LEADS(x) || (INV_ACK(x) && INV_COMMIT(x) && INV_HWMMAX(x) && INV_LACK(x) && INV_READS(x)))
/* TrimmedCommitted (issue 16): retention deletes only records some leader exposed
   as committed: no copy's log start passes the highest HWM ever exposed */
#if MAX_TRIM > 0
#define INV_TRIM (gtrim <= chwm)
#else
#define INV_TRIM 1
#endif

/* The observer: executable only in a state that breaks an invariant; it then
   says which one and fails.  (OneLeaderPerGeneration is asserted in Acknowledge.) */
active proctype invariants() {
  d_step { !(INV_OK(0) && INV_OK(1) && INV_OK(2) && INV_TRIM) ->
#if MAX_TRIM > 0
    if
    :: !INV_TRIM -> printf("VIOLATION TrimmedCommitted: a copy's log start %d passes the highest exposed HWM %d\n", gtrim, chwm)
    :: else
    fi;
#endif
    for (vx : 0 .. N-1) {
      if
      :: LEADS(vx) ->
         for (vy : 1 .. NV) {
           if
           :: !INV_AV(vx, vy) ->
              printf("VIOLATION AckedSurvive: broker %d serves generation %d without acknowledged value %d\n", vx, br[vx].lg, vy)
           :: else
           fi
         }
         if
         :: !INV_LACK(vx) ->
            printf("VIOLATION LeaderAcksExclusive: broker %d acknowledges acks=leader in generation %d under its lease while a newer generation serves\n", vx, br[vx].lg)
         :: else
         fi;
         if
         :: !INV_READS(vx) ->
            printf("VIOLATION ReadsNeverStepBack: the pinned leader %d of generation %d answers fetches with HWM %d below a record an earlier leader exposed\n", vx, cgen, br[vx].hwm)
         :: else
         fi;
         if
         :: !INV_HWMMAX(vx) ->
            printf("VIOLATION HwmNotBelowMax: the pinned leader %d of generation %d shows HWM %d below the maximum HWM %d\n", vx, cgen, br[vx].hwm, maxhwm)
         :: else
         fi;
         for (vk : 0 .. L-1) {
           if
           :: vk < chwm && cgat[vk] <= br[vx].lg && !RBX(vk) && vk >= LS(vx) && !(vk < br[vx].ln && br[vx].e[vk] == clog[vk]) ->
              printf("VIOLATION CommittedStable: broker %d (generation %d) lost committed offset %d\n", vx, br[vx].lg, vk)
           :: vk < chwm && cgat[vk] <= br[vx].lg && !RBX(vk) && (vk < br[vx].ln && br[vx].e[vk] == clog[vk]) && ACTIVEPIN(vx) && vk >= br[vx].hwm ->
              printf("VIOLATION CommittedStable: Active leader %d (generation %d) hides committed offset %d (HWM %d)\n", vx, br[vx].lg, vk, br[vx].hwm)
           :: else
           fi
         }
      :: else
      fi
    }
    assert(false)
  }
}

/* common prefix of broker a's log (first na entries) and broker b's log (first nb) -> t */
inline common(a, b) {   /* uses ca, cb: the lengths to compare */
  vt = 0;
  for (vk : 0 .. L-1) {
    if :: vt == vk && vk < ca && vk < cb && br[a].e[vk] == br[b].e[vk] -> vt++ :: else fi
  }
}

inline truncate_to(b, n) {
  tn = n;
#if MAX_TRIM > 0
  assert(tn >= br[b].ls);   /* a cut below the log start is a start-over (below_start) */
#endif
  for (vk : 0 .. L-1) { if :: vk >= tn -> br[b].e[vk] = 0 :: else fi }
  br[b].ln = tn;
  if :: br[b].syn > tn -> br[b].syn = tn :: else fi;
#ifndef STALE_FOLLOWER_HWM
  if :: br[b].hwm > tn -> br[b].hwm = tn :: else fi;
#endif
  skip
}

/* Canonical values for state nobody reads any more (fewer stored states, same
   behaviours): the serving state (cursors, connections, h0, start-record offset,
   HWM) outside phase 2, the fence state outside phase 1, the generation when idle. */
/* With an abandon in the model (MAX_ABANDON) a follower keeps the HWM it learned
   (the code's peer_follow.c); a stopped process loses it. */
#if defined(NEW_LEADER_OWN_HWM) || MAX_ABANDON > 0
#define IDLE_HWM(b) skip
#else
#define IDLE_HWM(b) br[b].hwm = 0
#endif
inline idle_serve(b) {
  for (vk : 0 .. N-1) { br[b].cur[vk] = 0; br[b].ccid[vk] = NONE; br[b].cinc[vk] = 0; br[b].h0[vk] = 0 }
  br[b].mark = 0; IDLE_HWM(b)
}
inline idle_fence(b) {
  br[b].prom = 0; br[b].cnt = 0; br[b].rcl = 0; br[b].fmh = 0;
  for (vk : 0 .. N-1) { br[b].fcid[vk] = 0; br[b].ffl[vk] = 0 }
#if MAX_ROLL > 0
  br[b].fin = 0;
#endif
  for (vk : 0 .. N-1) { br[b].acid[vk] = 0; br[b].agen[vk] = 0; br[b].alen[vk] = 0 }
}
inline go_idle(b) {      /* phase 0: neither fencing nor serving */
  br[b].ph = 0; br[b].lg = 0; idle_serve(b); idle_fence(b);
#if MAX_NQ > 0
  llease[b] = 0;
#endif
  skip
}

#ifdef TOKEN_AFTER_ERROR
#define PEND(b) br[b].pend
#else
#define PEND(b) 0
#endif

inline stop_process(b) {
  br[b].inc = 0; go_idle(b);
#ifdef FAILED_WRITE_KEEPS_MEMORY
  if :: br[b].wf ->   /* the restart reads the ballot the file kept */
     br[b].bgen = br[b].dbgen; br[b].bl = br[b].dbl; br[b].blcid = br[b].dblcid; br[b].blinc = br[b].dblinc;
     br[b].wf = 0
  :: else fi;
#endif
#ifdef TOKEN_AFTER_ERROR
  br[b].pend = 0;
#endif
#if MAX_ABANDON > 0
  br[b].hwm = 0; br[b].keep = 0;
#endif
#if MAX_ROLL > 0
  br[b].srv = 0;
#endif
}

/* ---------------- data path ---------------- */
inline Append(l) {
  d_step { LEADS(l) && !PEND(l) && nextv <= NV && br[l].ln < L -> COVER(Append);
    printf("Append(%d): value %d at offset %d, generation %d\n", l, nextv, br[l].ln, br[l].lg);
    br[l].e[br[l].ln] = E(br[l].lg, nextv); br[l].ln++; nextv++;
    skip }
}

inline Flush(b) {
  d_step { NEEDSYNC && br[b].syn < br[b].ln && br[b].bad == NOBAD -> COVER(Flush);
    printf("Flush(%d): synced %d..%d\n", b, br[b].syn, br[b].ln);
    br[b].syn = br[b].ln;
    skip }
}

/* new connection: leader re-measures the follower's cursor */
inline Handshake(l, f) {
  d_step { l != f && LEADS(l) && UP(f) && !br[l].cut && !br[f].cut && !CONN(l, f) -> COVER(Handshake);
    if
    :: br[l].ccid[f] != br[f].cid ->
       printf("Handshake(%d->%d): new copy id %d, full copy\n", l, f, br[f].cid);
#ifndef NO_CURSOR_RESET
       br[l].cur[f] = 0;
#endif
       br[l].h0[f] = br[l].ln      /* Finding 1: the log end, not the HWM */
    :: else ->
       ca = HELD(f); cb = br[l].ln; common(f, l);
       printf("Handshake(%d->%d): same copy id %d, measured %d\n", l, f, br[f].cid, vt);
       br[l].cur[f] = vt
    fi;
    br[l].ccid[f] = br[f].cid; br[l].cinc[f] = br[f].inc;
    skip }
}

/* Review 5, item 7: the copy an abandon kept refuses a cut below what it keeps
   while the maximum HWM still covers it (a later abandon that lowers the maximum
   HWM is a loss the operator accepted again).  With the other rules no cut below
   it is ever asked: the guard is the second line behind the fence's own members. */
#if MAX_ABANDON > 0
#define KEEP_OF(b) br[b].keep
#else
#define KEEP_OF(b) 0
#endif
#if MAX_ABANDON > 0 && !defined(NO_KEEP_GUARD)
#define KEEP_REFUSES_CUT(b, n) ((n) < KEEP_OF(b) && (n) < maxhwm)
#else
#define KEEP_REFUSES_CUT(b, n) 0
#endif
/* KEEP_CUT_ASSERT: instead of refusing, report that the cut was asked at all. */
#ifdef KEEP_CUT_ASSERT
#define KEPT_CUT_ASKED(b) printf("VIOLATION KeptCopyCut: the copy broker %d kept for an abandon is asked to cut below it\n", b); assert(false)
#else
#define KEPT_CUT_ASKED(b) skip
#endif

/* ---------------- retention (issue 16) ---------------- */
/* The copy t starts over at base: its log is emptied and starts at base (a fresh
   segment there, durable at once); the ghosts below are the source s's (the code
   carries the generation line in force at base to t, so its rank and divergence
   point read as s's) */
inline start_over(t, s, base) {
  tn = base;
  for (vk : 0 .. L-1) { if :: vk < tn -> br[t].e[vk] = br[s].e[vk] :: else -> br[t].e[vk] = 0 fi }
  br[t].ln = tn; br[t].syn = tn; br[t].ls = tn; br[t].bad = NOBAD;
  if :: br[t].hwm > tn -> br[t].hwm = tn :: else fi;
  if :: br[t].ls > gtrim -> gtrim = br[t].ls :: else fi
}
/* The copy t is to take source s's records from vt (their common prefix) on.  A
   cut below s's log start (s deleted what t would need) or below t's own (t cannot
   cut what it deleted) starts t over at the larger of vt and s's log start; the
   twin RESUME_AT_START cuts t to s's log start instead, keeping t's own records
   below it (what a truncation to the leader's start did). */
#if MAX_TRIM > 0
inline below_start(t, s) {   /* cb: how far s's records go (common's length) */
  if
  :: (vt < LS(s) || vt < LS(t)) && (vt < cb || vt < br[t].ln) ->
#ifdef RESUME_AT_START
     if
     :: vt < LS(s) && LS(t) <= vt && br[t].ln >= LS(s) ->
        printf("  cut %d below the source's log start %d: cut to it\n", vt, LS(s));
        truncate_to(t, LS(s)); vt = LS(s)
     :: else ->
        if :: vt < LS(s) -> vt = LS(s) :: else fi;
        start_over(t, s, vt)
     fi
#else
     if :: vt < LS(s) -> vt = LS(s) :: else fi;
     printf("  copy %d starts over at %d (log starts: source %d, own %d)\n", t, vt, LS(s), LS(t));
     start_over(t, s, vt)
#endif
  :: else
  fi
}
#else
#define below_start(t, s) skip
#endif

/* The leader moves its log start one segment on: only whole segments below its
   HWM go, never the one holding its last record (the twin TRIM_ABOVE_HWM lets the
   log start pass the HWM).  Durable at once (unlink, then fsync of the directory). */
#ifdef TRIM_ABOVE_HWM
#define TRIM_TOP(l) (br[l].ln - 1)
#else
#define TRIM_TOP(l) (br[l].hwm < br[l].ln - 1 -> br[l].hwm : br[l].ln - 1)
#endif
inline take_log_start(b) {   /* the new log start is in tn */
  br[b].ls = tn;
  if :: br[b].syn < tn -> br[b].syn = tn :: else fi;
  if :: tn > gtrim -> gtrim = tn :: else fi
}
inline Trim(l) {
  d_step { LEADS(l) && ntrim < MAX_TRIM && br[l].ln > 0 && br[l].ls < TRIM_TOP(l) -> COVER(Trim);
    ntrim++;
    printf("Trim(%d): log start %d -> %d (HWM %d)\n", l, br[l].ls, br[l].ls + 1, br[l].hwm);
    tn = br[l].ls + 1; take_log_start(l);
    skip }
}
/* A follower deletes the segments below the log start its leader ships, never the
   one holding its own last record (the twin FOLLOWER_OWN_RETENTION trims by its
   own measure: everything but its last record). */
#ifdef FOLLOWER_OWN_RETENTION
#define FTRIM_TO(l, f) (br[f].ln - 1)
#define FTRIM_BUDGET (ntrim < MAX_TRIM)
#define FTRIM_COUNT ntrim++
#else
#define FTRIM_TO(l, f) (LS(l) < br[f].ln - 1 -> LS(l) : br[f].ln - 1)
#define FTRIM_BUDGET 1
#define FTRIM_COUNT skip
#endif
inline FollowTrim(l, f) {
  d_step { l != f && LEADS(l) && UP(f) && !br[l].cut && !br[f].cut && CONN(l, f) && !PEND(f) &&
           br[f].bgen == br[l].lg && NAMES(f, l) && br[f].ln > 0 && br[f].ls < FTRIM_TO(l, f) && FTRIM_BUDGET -> COVER(FollowTrim);
    FTRIM_COUNT;
    printf("FollowTrim(%d->%d): log start %d -> %d\n", l, f, br[f].ls, FTRIM_TO(l, f));
    tn = FTRIM_TO(l, f); take_log_start(f);
    skip }
}

/* ship the next record (truncating a divergent suffix first), and confirm */
inline Ship(l, f) {
  d_step { l != f && LEADS(l) && UP(f) && !br[l].cut && !br[f].cut && CONN(l, f) && !PEND(f) &&
           br[f].bgen == br[l].lg && NAMES(f, l) -> COVER(Ship);
    ca = br[f].ln; cb = br[l].ln; common(f, l);
    below_start(f, l);
    vs = vt;
    if
    :: vs < br[f].ln && KEEP_REFUSES_CUT(f, vs) ->
       printf("Ship(%d->%d): refused, a cut to %d is below what the abandon kept (%d)\n", l, f, vs, KEEP_OF(f));
       KEPT_CUT_ASKED(f)
    :: else ->
    if
    :: vs < br[l].ln || vs < br[f].ln ->
       truncate_to(f, vs);
       if :: br[f].bad != NOBAD && br[f].bad >= vs -> br[f].bad = NOBAD :: else fi;
       if
       :: vs < br[l].ln -> br[f].e[vs] = br[l].e[vs]; br[f].ln = vs + 1
       :: else
       fi
    :: else
    fi;
#ifdef NEW_LEADER_OWN_HWM
    br[f].hwm = (br[l].hwm < br[f].ln -> br[l].hwm : br[f].ln);   /* only this twin reads it */
#else
#if MAX_ABANDON > 0
    /* peer_follow.c: raised to the leader's HWM, never beyond the follower's log */
    if :: br[l].hwm > br[f].hwm -> br[f].hwm = (br[l].hwm < br[f].ln -> br[l].hwm : br[f].ln) :: else fi;
#endif
#endif
    if :: HELD(f) > br[l].cur[f] -> br[l].cur[f] = HELD(f) :: else fi;
    printf("Ship(%d->%d): follower log end %d, confirmed %d\n", l, f, br[f].ln, br[l].cur[f])
    fi;
    skip }
}

/* how many copies hold offset o (the leader counts itself only on what it holds) -> c */
inline holders(l, o) {
#ifdef ACK_WITHOUT_OWN_COPY
  vc = (br[l].ln > o -> 1 : 0);
#else
  vc = (HELD(l) > o -> 1 : 0);
#endif
  for (vk : 0 .. N-1) {
    if :: vk != l && br[l].cur[vk] > o -> vc++ :: else fi
  }
#ifdef ACK_WITHOUT_OWN_COPY
  if :: vc > 0 && (br[l].ln <= o) -> vc = 0 :: else fi
#else
  if :: vc > 0 && (HELD(l) <= o) -> vc = 0 :: else fi   /* rule 2: the leader is in every majority */
#endif
}

inline Acknowledge(l, v) {
  d_step { LEADS(l) && v < nextv && acked[v] == 0 -> COVER(Acknowledge);
    vj = NONE;
    for (vi : 0 .. L-1) {
      if :: vi < br[l].ln && br[l].e[vi] == E(br[l].lg, v) -> vj = vi :: else fi
    }
    if
    :: vj != NONE ->
       holders(l, vj);
#ifdef STALE_FOLLOWER_HWM
       vc = (br[l].hwm > vj && HELD(l) > vj -> MAJ : 0);   /* the old code: acknowledged once the HWM covers it */
#endif
       if
       :: vc >= MAJ ->
          printf("Acknowledge(%d): value %d (offset %d) in generation %d\n", l, v, vj, br[l].lg);
          if
          :: ackinc[br[l].lg] != 0 && ackinc[br[l].lg] != br[l].inc ->
             printf("VIOLATION OneLeaderPerGeneration: two leader processes acknowledge in generation %d\n", br[l].lg);
             assert(false)
          :: else
          fi;
          ackinc[br[l].lg] = br[l].inc;
          acked[v] = br[l].lg
       :: else
       fi
    :: else
    fi;
    skip }
}

/* ghost: the records below leader l's HWM are exposed (consumers may read them).
   A leader of a generation an abandon superseded exposes the history the operator
   gave up (the loss it accepted): not tracked.  Rule 3, checked as it happens
   (HwmHeldByMajority): a record of the leader's own generation is exposed only
   when a majority holds it by the leader's measurements (offsets from `from` on are
   the newly exposed ones). */
inline expose(l, from) {
  for (vj : 0 .. L-1) {
    if
    :: vj >= from && vj < br[l].hwm && GEN(br[l].e[vj]) == br[l].lg ->
       holders(l, vj);
       if
       :: vc < MAJ ->
          printf("VIOLATION HwmHeldByMajority: leader %d exposes offset %d of generation %d held by %d copies\n", l, vj, br[l].lg, vc);
          assert(false)
       :: else
       fi
    :: else
    fi;
    if :: (vj >= chwm || RBX(vj)) && vj < br[l].hwm && br[l].lg >= abgen -> clog[vj] = br[l].e[vj]; cgat[vj] = br[l].lg;
#if MAX_ROLL > 0
             rbx[vj] = 0;
#endif
             skip
       :: else fi
  }
  if :: br[l].hwm > chwm && br[l].lg >= abgen -> chwm = br[l].hwm :: else fi
}

/* HWM by the Raft rule: a record of the leader's own generation held by a majority */
inline Commit(l) {
  d_step { LEADS(l) && br[l].hwm < br[l].ln -> COVER(Commit);
    vs = br[l].hwm;
    for (vi : 1 .. L) {
      if
      :: vi > br[l].hwm && vi <= br[l].ln ->
         holders(l, vi - 1);
#ifdef HWM_OLD_GEN
         if :: vc >= MAJ -> vs = vi :: else fi
#else
         if :: vc >= MAJ && GEN(br[l].e[vi-1]) == br[l].lg -> vs = vi :: else fi
#endif
      :: else
      fi
    }
    if
    :: vs > br[l].hwm ->
       printf("Commit(%d): HWM %d -> %d in generation %d\n", l, br[l].hwm, vs, br[l].lg);
       vt = br[l].hwm; br[l].hwm = vs;
       expose(l, vt)
    :: else
    fi;
    skip }
}

/* ---------------- reports and measurements ---------------- */
/* Finding 6: while it waits for inventories, or once an inventory shows a generation
   above the stored one, the control plane accepts no report */
#ifdef REPORT_WHILE_WAITING
#define REPORT_OK0 1
#else
#define REPORT_OK0 (!cpwait && seen <= cgen)
#endif
/* review 5, item 3: a report whose HWM is beyond the leader's own log is refused */
#ifdef STALE_FOLLOWER_HWM
#define REPORT_OK REPORT_OK0
#else
#define REPORT_OK (REPORT_OK0 && br[l].hwm <= HELD(l))
#endif
inline Report(l) {
  d_step { LEADS(l) && !br[l].cut && br[l].lg == cgen && pl[cgen] == l &&
           pcid[cgen] == br[l].cid && pinc[cgen] == br[l].inc && REPORT_OK -> COVER(Report);
    printf("Report(%d): generation %d, HWM %d\n", l, cgen, br[l].hwm);
#ifdef NO_GEN_START_RECORD
    if :: !act[cgen] -> act[cgen] = 1; printf("  generation %d Active\n", cgen) :: else fi;
#else
    if :: !act[cgen] && br[l].hwm > br[l].mark -> act[cgen] = 1; printf("  generation %d Active\n", cgen) :: else fi;
#endif
    if
    :: act[cgen] ->
       if :: br[l].hwm > maxhwm -> maxhwm = br[l].hwm; hwmgen = GEN(br[l].e[maxhwm-1]) :: else fi;
       mcid[l] = br[l].cid; mlen[l] = HELD(l); mgen[l] = RGEN(l);
       if :: mlen[l] >= br[l].hwm && br[l].hwm > fl[l] -> fl[l] = br[l].hwm :: else fi
    :: else
    fi;
    for (vi : 0 .. N-1) {
      if
      :: vi != l && br[l].ccid[vi] != NONE && br[l].ccid[vi] == regcid[vi] ->
#ifdef STRANGER_NOT_ACTIVE
         if :: strg[vi] && br[l].cur[vi] >= br[l].h0[vi] -> strg[vi] = 0; printf("  stranger %d cleared\n", vi);
               mcid[vi] = br[l].ccid[vi]; mlen[vi] = br[l].cur[vi];
               mgen[vi] = (br[l].cur[vi] > 0 -> GEN(br[l].e[br[l].cur[vi]-1]) : 0)
            :: else fi;
#endif
         if
         :: act[cgen] ->
            if
            :: strg[vi] && br[l].cur[vi] >= br[l].h0[vi] -> strg[vi] = 0; printf("  stranger %d cleared\n", vi)
            :: else
            fi;
            if
            :: !strg[vi] && br[l].ccid[vi] == mcid[vi] && BELOWFL(br[l].cur[vi], fl[vi]) ->
               strg[vi] = 1; printf("  copy %d below its floor: stranger\n", vi)
            :: !strg[vi] ->
               mcid[vi] = br[l].ccid[vi]; mlen[vi] = br[l].cur[vi];
               mgen[vi] = (br[l].cur[vi] > 0 -> GEN(br[l].e[br[l].cur[vi]-1]) : 0);
               if :: mlen[vi] >= br[l].hwm && br[l].hwm > fl[vi] -> fl[vi] = br[l].hwm :: else fi
            :: else
            fi
         :: else
         fi
      :: else
      fi
    }
    skip }
}

/* ---------------- registration (start of a process) ---------------- */
/* Finding 6: after a start or a restore the control plane waits for inventories from
   a majority of the copies its store names (a new copy carries no promise, so it
   cannot vouch for the highest generation), and hands out no ballot while it waits
   or while an inventory shows a generation above the stored one. */
#ifdef WAIT_ANY_COPY
#define WAIT_COUNTS(b) 1
#else
#define WAIT_COUNTS(b) (br[b].cid == mcid[b])
#endif
#ifdef BALLOT_WHILE_WAITING
#define CP_SURE 1
#else
#define CP_SURE (!cpwait && seen <= cgen)
#endif

inline inventory_in(b) {
  icid[b] = br[b].cid; ilen[b] = HELD(b); igen[b] = RGEN(b);
#if MAX_ROLL > 0
  br[b].ci = cpi;
#endif
  if :: br[b].bgen > seen -> seen = br[b].bgen :: else fi;
  if :: br[b].cid != regcid[b] -> strg[b] = 1 :: else fi;
  if :: br[b].cid == mcid[b] && BELOWFL(HELD(b), fl[b]) -> strg[b] = 1 :: else fi;
  regcid[b] = br[b].cid;
  if
  :: cpwait -> invm = invm | BIT(b);
     if :: WAIT_COUNTS(b) -> invk = invk | BIT(b) :: else fi;
     if :: POP(invk) >= MAJ -> cpwait = 0; invm = 0; invk = 0 :: else fi
  :: else
  fi
}

inline ballot_from_cp(b) {
  if
  :: CP_SURE && (cgen > br[b].bgen || (cgen == br[b].bgen && br[b].bl == NONE)) ->
     br[b].bgen = cgen; br[b].bl = pl[cgen]; br[b].blcid = pcid[cgen]; br[b].blinc = pinc[cgen]
  :: else
  fi
}

inline Register(b) {
  d_step { !UP(b) && !br[b].cut -> COVER(Register);
    vc = br[b].cid; vg = 0;
    if
    :: br[b].lostsid -> sidctr++; br[b].sid = sidctr; br[b].lostsid = 0
    :: !br[b].lostsid && br[b].rot -> sidctr++; br[b].sid = sidctr; vg = 1
    :: else
    fi;
    br[b].rot = 0;
    if
    :: br[b].bsid != br[b].sid ->
#ifdef NO_CID_BIND
       if :: vg -> cidctr++; br[b].cid = cidctr :: else fi;
#else
       cidctr++; br[b].cid = cidctr;
#endif
       br[b].bsid = br[b].sid
    :: else
    fi;
    if
    :: br[b].cid != vc ->          /* a new copy: a lost cache range no longer matters */
       if :: br[b].bad != NOBAD -> truncate_to(b, br[b].bad); br[b].bad = NOBAD :: else fi
    :: else
    fi;
    if :: NEEDSYNC -> br[b].syn = br[b].ln :: else fi;   /* same boot: the data-directory sync succeeded */
    incctr++; br[b].inc = incctr; br[b].tok = 1;
    printf("Register(%d): storage id %d, copy id %d, incarnation %d, log end %d\n",
           b, br[b].sid, br[b].cid, br[b].inc, br[b].ln);
    if
    :: br[b].cid != vc && br[b].bl == b ->
#ifdef NO_LEADER_GIVES_UP
       /* resumes the generation its ballot names it leader of */
       br[b].blcid = br[b].cid; br[b].blinc = br[b].inc; br[b].lg = br[b].bgen; br[b].ph = 2;
       br[b].mark = 0; printf("  resumes generation %d with new ids\n", br[b].lg)
#else
       br[b].bl = NONE; br[b].blcid = NONE; br[b].blinc = NONE     /* gives up */
#endif
    :: br[b].cid == vc && br[b].bl == b && br[b].blcid == br[b].cid ->
#ifdef RESTART_RESUMES_GEN
       br[b].blinc = br[b].inc; br[b].lg = br[b].bgen; br[b].ph = 2; br[b].mark = 0;
       printf("  resumes generation %d with the same ids\n", br[b].lg)
#else
       skip
#endif
    :: else
    fi;
    inventory_in(b);
    reginc[b] = br[b].inc; lease[b] = 1;
#ifdef PIN_BY_REGISTRATION
    if
    :: pl[cgen] == b -> pcid[cgen] = br[b].cid; pinc[cgen] = br[b].inc; mcid[b] = br[b].cid; strg[b] = 0
    :: else
    fi;
#endif
    if :: br[b].ph == 0 -> ballot_from_cp(b) :: else fi;
    skip }
}

/* ---------------- faults ---------------- */
inline Crash(b) {
  d_step { UP(b) && FAULT && ncrash < MAX_CRASH && (CRASH_MASK & BIT(b)) -> COVER(Crash);
    ncrash++; nfault++;
    printf("Crash(%d): power loss, log end %d -> %d\n", b, br[b].ln, br[b].syn);
    stop_process(b);
    truncate_to(b, br[b].syn); br[b].bad = NOBAD;
#ifdef NO_ROTATE_ON_CRASH
    br[b].rot = 0;
#else
    br[b].rot = (MODE(b) -> 0 : 1);
#endif
    skip }
}

inline crash_one(b) {
  stop_process(b);
  truncate_to(b, br[b].syn); br[b].bad = NOBAD;
#ifdef NO_ROTATE_ON_CRASH
  br[b].rot = 0;
#else
  br[b].rot = (MODE(b) -> 0 : 1);
#endif
}

/* the whole rack loses power: every live broker crashes at once */
inline RackPowerLoss() {
  d_step { FAULT && nrack < MAX_RACK -> COVER(RackPowerLoss);
    nrack++; nfault++;
    printf("RackPowerLoss: every broker loses power\n");
    for (vj : 0 .. N-1) {
      if
      :: UP(vj) -> crash_one(vj)
      :: else ->     /* a broker that was down loses its page cache and boot too */
         truncate_to(vj, br[vj].syn); br[vj].bad = NOBAD;
#ifndef NO_ROTATE_ON_CRASH
         if :: !MODE(vj) -> br[vj].rot = 1 :: else fi;
#endif
         skip
      fi
    }
    skip }
}

inline CrashLoseSid(b) {
  d_step { UP(b) && FAULT && nlost < MAX_LOSTSID && (CRASH_MASK & BIT(b)) -> COVER(CrashLoseSid);
    nlost++; nfault++;
    printf("CrashLoseSid(%d): power loss and the storage-id file is lost, log end %d -> %d\n", b, br[b].ln, br[b].syn);
    stop_process(b);
    truncate_to(b, br[b].syn); br[b].bad = NOBAD;
    br[b].lostsid = 1; br[b].rot = 0;
    skip }
}

inline ProcessKill(b) {
  d_step { UP(b) && FAULT && nkill < MAX_KILL && (KILL_MASK & BIT(b)) -> COVER(ProcessKill);
    nkill++; nfault++;
    printf("ProcessKill(%d): same boot, nothing lost\n", b);
    stop_process(b);
    br[b].rot = (br[b].tok -> 0 : 1);
    skip }
}

inline SyncError(b) {
  d_step { UP(b) && FAULT && nse < MAX_SE && (SE_MASK & BIT(b)) && br[b].syn < br[b].ln -> COVER(SyncError);
    nse++; nfault++;
#ifdef TOKEN_AFTER_ERROR
    /* the old code: the flusher only marks the error; a 500 ms timer or the
       next failing append removes the token and exits (FailClosedLate) */
    printf("SyncError(%d): sync failed, offsets %d..%d are not durable; the token is still there\n", b, br[b].syn, br[b].ln);
    br[b].bad = br[b].syn; br[b].pend = 1;
    skip }
}
inline FailClosedLate(b) {
  d_step { UP(b) && br[b].pend -> COVER(FailClosedLate);
    printf("FailClosedLate(%d): token removed, exit\n", b);
    br[b].tok = 0;
    stop_process(b);
#else
    printf("SyncError(%d): sync failed, offsets %d..%d are not durable; token removed, exit\n", b, br[b].syn, br[b].ln);
    br[b].bad = br[b].syn; br[b].tok = 0;
    stop_process(b);
#endif
#ifdef NO_BOOT_TOKEN
    if :: !MODE(b) -> br[b].rot = 0 :: else -> br[b].rot = 1 fi;
#else
#ifdef ONCOMMIT_NO_TOKEN
    if :: MODE(b) -> br[b].rot = 0 :: else -> br[b].rot = 1 fi;
#else
    br[b].rot = 1;
#endif
#endif
    skip }
}

/* the kernel drops clean pages of a failed write: the copy loses them, ids unchanged */
inline Evict(b) {
  d_step { br[b].bad != NOBAD && br[b].bad < br[b].ln -> COVER(Evict);
    printf("Evict(%d): page cache drops offsets %d..%d\n", b, br[b].bad, br[b].ln);
    truncate_to(b, br[b].bad); br[b].bad = NOBAD;
    skip }
}

inline Wipe(b) {
  d_step { FAULT && nwipe < MAX_WIPE && (WIPE_MASK & BIT(b)) -> COVER(Wipe);
    nwipe++; nfault++;
    printf("Wipe(%d): empty data directory\n", b);
    stop_process(b);
#if MAX_TRIM > 0
    br[b].ls = 0;
#endif
    truncate_to(b, 0); br[b].bad = NOBAD;
    sidctr++; br[b].sid = sidctr; br[b].bsid = br[b].sid; cidctr++; br[b].cid = cidctr;
    br[b].bgen = 0; br[b].bl = NONE; br[b].blcid = NONE; br[b].blinc = NONE;
    br[b].rot = 0; br[b].lostsid = 0; br[b].hwm = 0;
    skip }
}

inline DeleteShardDir(b) {
  d_step { UP(b) && !br[b].cut && FAULT && ndel < MAX_DEL && (DEL_MASK & BIT(b)) -> COVER(DeleteShardDir);
    ndel++; nfault++;
    go_idle(b);
#if MAX_TRIM > 0
    br[b].ls = 0;
#endif
    truncate_to(b, 0); br[b].bad = NOBAD; br[b].hwm = 0;
#ifndef NO_COPY_ID
    cidctr++; br[b].cid = cidctr;
#endif
    br[b].bgen = 0; br[b].bl = NONE; br[b].blcid = NONE; br[b].blinc = NONE;
    printf("DeleteShardDir(%d): shard directory made anew, copy id %d\n", b, br[b].cid);
    inventory_in(b);
    ballot_from_cp(b);
    skip }
}

/* RSI_BELOW_FLOOR: the restored snapshot lacks only records the control plane had
   measured on this copy (it holds nothing above its floor); without it the restore
   may also lose records acknowledged since the copy's last measurement (Finding 5). */
#ifdef RSI_BELOW_FLOOR
#define RSI_OK(b) (br[b].cid == mcid[b] && br[b].ln <= fl[b])
#else
#define RSI_OK(b) 1
#endif
inline RollbackSameIds(b) {
  d_step { !UP(b) && FAULT && nrsi < MAX_RSI && br[b].ln > LS(b) && RSI_OK(b) -> COVER(RollbackSameIds);
    nrsi++; nfault++;
    printf("RollbackSameIds(%d): older snapshot of the directory, ids unchanged, log end %d -> %d\n", b, br[b].ln, br[b].ln - 1);
    truncate_to(b, br[b].ln - 1);
    skip }
}

inline LeaseLapse(b) {
  d_step { lease[b] && (!UP(b) || br[b].cut || (nlapse < MAX_LAPSE && (LAPSE_MASK & BIT(b)))) -> COVER(LeaseLapse);
    if :: UP(b) && !br[b].cut -> nlapse++ :: else fi;
    printf("LeaseLapse(%d)\n", b);
    lease[b] = 0;
#if MAX_NQ > 0
    llease[b] = 0;   /* counted from the send, the per-shard lease ends before the control plane's */
#endif
    skip }
}

/* heartbeat: renews the lease; a leader whose pin is gone stops */
inline Heartbeat(b) {
  d_step { UP(b) && !br[b].cut &&
           (!lease[b] || (br[b].ph != 0 && (cgen > br[b].lg || pl[br[b].lg] != b || pinc[br[b].lg] != br[b].inc))) -> COVER(Heartbeat);
    lease[b] = 1;
    if
    :: br[b].ph != 0 && (cgen > br[b].lg || pl[br[b].lg] != b || pinc[br[b].lg] != br[b].inc) ->
       printf("Heartbeat(%d): pin gone, stops leading generation %d\n", b, br[b].lg);
       go_idle(b)
    :: else -> printf("Heartbeat(%d): lease renewed\n", b)
    fi;
#if MAX_ABANDON > 0
    /* the heartbeat reply carries the assignment: an idle copy takes its ballot */
    if :: br[b].ph == 0 -> ballot_from_cp(b) :: else fi;
#endif
    skip }
}

inline Partition(b) {
  d_step { !br[b].cut && FAULT && npart < MAX_PART && (PART_MASK & BIT(b)) -> COVER(Partition);
    npart++; nfault++; br[b].cut = 1; printf("Partition(%d)\n", b); skip }
}

inline Heal(b) {
  d_step { br[b].cut -> COVER(Heal); br[b].cut = 0; printf("Heal(%d)\n", b); skip }
}

inline Drain(l) {
  d_step { LEADS(l) && FAULT && ndrain < MAX_DRAIN && pl[cgen] == l && br[l].lg == cgen -> COVER(Drain);
    ndrain++; nfault++; drain = 1; printf("Drain(%d): hand-off requested\n", l);
#if MAX_NQ > 0
    llease[l] = 0;   /* a drainer refuses producers */
#endif
    skip }
}

/* Review 5, item 6: the acks=leader lease.  RenewLease: a heartbeat reply renews
   the Active pinned leader's per-shard lease, unless the control plane stopped
   renewing it (renew_lease: false).  LeaseExpire: time passes.  NoQuorum: the
   leader reports written records no majority has held for more than a lease
   (its followers are slow or cut off; the model lets it happen at any time). */
#if MAX_NQ > 0
inline RenewLease(l) {
  d_step { LEADS(l) && !llease[l] && CURPIN(l) && act[cgen] && lease[l] && !br[l].cut && !nq && !drain -> COVER(RenewLease);
    llease[l] = 1; printf("RenewLease(%d): acks=leader lease for generation %d\n", l, cgen); skip }
}
inline LeaseExpire(l) {
  d_step { llease[l] -> COVER(LeaseExpire); llease[l] = 0; printf("LeaseExpire(%d)\n", l); skip }
}
/* The control plane's wait of one lease on its lease clock from the moment it
   stopped renewing ends.  Timing, abstracted: a lease the leader took from a
   reply sent before the stop ends before that wait does (counted from the
   request's send, shorter than the lease), so the wait ends only once the
   leader holds no lease.  A renewal after the stop would break this. */
inline NoQuorumWaitOver(l) {
  d_step { nq && !nqp && pl[cgen] == l && !llease[l] -> COVER(NoQuorumWaitOver);
    nqp = 1; printf("NoQuorumWaitOver(%d): a lease has passed since renewals stopped\n", l); skip }
}
inline NoQuorum(l) {
  d_step { LEADS(l) && CURPIN(l) && act[cgen] && lease[l] && !nq && nnq < MAX_NQ -> COVER(NoQuorum);
    nnq++; nq = 1;
    printf("NoQuorum(%d): the control plane stops renewing its lease; the shard moves once it has passed\n", l);
    skip }
}
#endif

/* ---------------- placement ---------------- */
#ifdef NO_ID_CHECK_IN_PLACEMENT
#define TRUSTED(r) (mcid[r] != NONE)
#else
#define TRUSTED(r) (mcid[r] != NONE && mcid[r] == regcid[r] && !strg[r])
#endif
#define CAUGHTUP(r) (TRUSTED(r) && mlen[r] >= maxhwm)
#define INVMATCH(r) (TRUSTED(r) && icid[r] == mcid[r] && ilen[r] >= maxhwm && (maxhwm == 0 || igen[r] >= hwmgen))
#define ELIGIBLE(r) (lease[r] && (CAUGHTUP(r) || INVMATCH(r)))
#if MAX_NQ > 0 && defined(NQ_MOVE_AT_ONCE)
#define NQ_MOVE nq
#elif MAX_NQ > 0
#define NQ_MOVE (nq && nqp)   /* once the lease it no longer renews has passed (decide.c unrenewed_until_ms) */
#else
#define NQ_MOVE 0
#endif
#define TRIGGER (!lease[pl[cgen]] || reginc[pl[cgen]] != pinc[cgen] || regcid[pl[cgen]] != pcid[cgen] || \
                 drain || ftmo || seen > cgen || NQ_MOVE)
#ifdef RANK_BY_OFFSET
#define RANKGT(g1,n1,g2,n2) ((n1) > (n2))
#else
#define RANKGT(g1,n1,g2,n2) ((g1) > (g2) || ((g1) == (g2) && (n1) > (n2)))
#endif
#define PRANKG(r) (CAUGHTUP(r) -> mgen[r] : igen[r])
#define PRANKN(r) (CAUGHTUP(r) -> mlen[r] : ilen[r])

#ifdef GEN_FROM_STORE
#define NEWGEN (cgen + 1)
#else
#define NEWGEN ((seen > cgen -> seen : cgen) + 1)
#endif

inline assign(r0, recl) {
  vg = NEWGEN;
  prevg = cgen; cgen = vg;
  pl[vg] = r0; pcid[vg] = regcid[r0]; pinc[vg] = reginc[r0]; act[vg] = 0;
  for (vi : 0 .. N-1) {
    if
    :: TRUSTED(vi) -> asgcid[vi] = regcid[vi]; asgfl[vi] = fl[vi]
    :: else -> asgcid[vi] = NONE; asgfl[vi] = 0
    fi
  }
  drain = 0; ftmo = 0; rclg = recl; abg = 0;
#if MAX_NQ > 0
  nq = 0; nqp = 0;
#endif
#if MAX_ROLL > 0
  asgi = cpi;
#endif
  if :: seen < cgen -> seen = cgen :: else fi
}

/* Promote(r): placement picks r, an eligible copy of highest rank */
inline Promote(r) {
  d_step { !cpwait && TRIGGER && NEWGEN <= MAXG && ELIGIBLE(r) &&
           !(ELIGIBLE((r+1)%N) && RANKGT(PRANKG((r+1)%N), PRANKN((r+1)%N), PRANKG(r), PRANKN(r))) &&
           !(ELIGIBLE((r+2)%N) && RANKGT(PRANKG((r+2)%N), PRANKN((r+2)%N), PRANKG(r), PRANKN(r))) -> COVER(Promote);
    assign(r, 0);
    printf("Promote(%d): generation %d pinned to copy %d incarnation %d\n", r, cgen, pcid[cgen], pinc[cgen]);
    skip }
}

/* Reclaim: no copy is eligible; the crashed leader came back (new ids) and every
   follower is measured behind it: name it again, at a new generation */
inline Reclaim() {
  d_step { !cpwait && TRIGGER && NEWGEN <= MAXG && !ELIGIBLE(0) && !ELIGIBLE(1) && !ELIGIBLE(2) &&
           lease[pl[cgen]] && reginc[pl[cgen]] != pinc[cgen] && regcid[pl[cgen]] != pcid[cgen] -> COVER(Reclaim);
    vs = pl[cgen]; vc = 1;
#ifndef BLIND_RECLAIM
    for (vi : 0 .. N-1) {
      if
      :: vi != vs && TRUSTED(vi) && !RANKGT(igen[vs], ilen[vs], mgen[vi], mlen[vi]) -> vc = 0
      :: else
      fi
    }
#endif
    if
    :: vc ->
       assign(vs, 1);
#ifdef BLIND_RECLAIM
       asgcid[vs] = regcid[vs]; asgfl[vs] = 0;    /* trusts the returned leader's own inventory */
#endif
       printf("Reclaim: generation %d names the returned leader %d again\n", cgen, vs)
    :: else
    fi;
    skip }
}

/* Abandon(r): the operator's `placement abandon` (§4.9) for a shard with no eligible
   copy.  r is the live copy (lease, registered under the copy id it holds) that keeps
   most records, rank breaking ties; the new generation names every live copy (its
   promise counts, only r is trusted), the others return as strangers; floors and
   the maximum HWM are cut to what r holds; the fence adopts r only.  Ghost: what r
   lacks is the loss the operator accepted — values already written that r does not
   hold are marked ABANDONED (above every generation: exempt from AckedSurvive, never
   acknowledged twice), and the exposed history is cut to the prefix r agrees with. */
#define ABANDONED 254
#define LIVE(x) (lease[x] && icid[x] == regcid[x])
#define KEEPS_MORE(x, y) (HELD(x) > HELD(y) || (HELD(x) == HELD(y) && RGEN(x) > RGEN(y)))
inline Abandon(r) {
  d_step { !cpwait && TRIGGER && NEWGEN <= MAXG && naband < MAX_ABANDON && UP(r) && LIVE(r) &&
           !ELIGIBLE(0) && !ELIGIBLE(1) && !ELIGIBLE(2) &&
           !(LIVE((r+1)%N) && KEEPS_MORE((r+1)%N, r)) && !(LIVE((r+2)%N) && KEEPS_MORE((r+2)%N, r)) -> COVER(Abandon);
    naband++;
    vx = HELD(r);
    assign(r, 0);
    abg = 1; abgen = cgen;
    for (vi : 0 .. N-1) {
      if
      :: LIVE(vi) -> asgcid[vi] = regcid[vi]; mcid[vi] = regcid[vi]; strg[vi] = 0;
         mlen[vi] = (vi == r -> vx : 0); mgen[vi] = (vi == r -> RGEN(r) : 0)
      :: else -> asgcid[vi] = NONE; strg[vi] = 1
      fi;
      if :: fl[vi] > (vi == r -> vx : 0) -> fl[vi] = (vi == r -> vx : 0) :: else fi;
      asgfl[vi] = fl[vi]
    }
    if :: maxhwm > vx -> maxhwm = vx :: else fi;
    hwmgen = (maxhwm > 0 -> GEN(br[r].e[maxhwm-1]) : 0);
    /* ghost: the accepted loss: every value already written that r lacks (acknowledged
       or not yet: a deposed leader may still acknowledge it, from the history given up) */
    for (vy : 1 .. NV) {
      vs = 0;
      for (vk : 0 .. L-1) {
        if :: vk < vx && VAL(br[r].e[vk]) == vy && GEN(br[r].e[vk]) > 0 -> vs = 1 :: else fi
      }
      if :: vy < nextv && vs == 0 -> acked[vy] = ABANDONED :: else fi
    }
    vt = 0;
    for (vk : 0 .. L-1) {
      if :: vt == vk && vk < chwm && vk < vx && br[r].e[vk] == clog[vk] -> vt++ :: else fi
    }
    chwm = vt;
    printf("Abandon(%d): generation %d pinned to copy %d, keeping %d records; maximum HWM %d\n",
           r, cgen, pcid[cgen], vx, maxhwm);
    skip }
}

/* ---------------- promotion fence ---------------- */
/* Finding 4: a process that has served generation G never fences G again (after a
   control-plane rollback re-pins a stopped leader at its old generation, the shard
   needs a new generation).  Without a rollback the pin of G never comes back to a
   process that stopped serving G, so the bookkeeping exists only with MAX_ROLL. */
#if MAX_ROLL > 0 && !defined(REFENCE_SERVED_GEN)
#define NOT_SERVED(l) (cgen > br[l].srv)
#else
#define NOT_SERVED(l) 1
#endif

inline FenceStart(l) {
  d_step { UP(l) && !br[l].cut && br[l].ph != 1 && !(br[l].ph == 2 && br[l].lg == cgen) && NOT_SERVED(l) &&
           pl[cgen] == l && pcid[cgen] == br[l].cid && pinc[cgen] == br[l].inc -> COVER(FenceStart);
    if
    :: br[l].bgen > cgen || (br[l].bgen == cgen && !(br[l].bl == l && br[l].blcid == br[l].cid && br[l].blinc == br[l].inc)) ->
       printf("FenceStart(%d): own copy refuses generation %d (promised %d)\n", l, cgen, br[l].bgen);
       if :: br[l].bgen > seen -> seen = br[l].bgen :: else -> ftmo = 1 fi
    :: else ->
       printf("FenceStart(%d): promises generation %d\n", l, cgen);
       br[l].bgen = cgen; br[l].bl = l; br[l].blcid = br[l].cid; br[l].blinc = br[l].inc;
       idle_serve(l); idle_fence(l);
       br[l].ph = 1; br[l].lg = cgen; br[l].prom = BIT(l); br[l].rcl = rclg; br[l].fmh = maxhwm;
#if MAX_ABANDON > 0
       if :: abg && abgen == cgen -> br[l].keep = maxhwm :: else fi;   /* assign.c: the abandon's "keeps" */
#endif
       for (vk : 0 .. N-1) { br[l].fcid[vk] = asgcid[vk]; br[l].ffl[vk] = asgfl[vk] }
       br[l].cnt = (COUNTS(l, l) -> BIT(l) : 0); br[l].acid[l] = br[l].cid;
       br[l].agen[l] = RGEN(l); br[l].alen[l] = HELD(l);
#if MAX_ROLL > 0
       br[l].fin = asgi;
#endif
       skip
    fi;
    skip }
}

/* Finding 6: a promise request names the control-plane instance that made the
   assignment; a copy that has sent its inventory to a newer instance refuses it. */
#if MAX_ROLL > 0 && !defined(PROMISE_ANY_INSTANCE)
#define OLD_INSTANCE(l, r) (br[l].fin != br[r].ci)
#else
#define OLD_INSTANCE(l, r) 0
#endif

/* r promises l's generation (its ballot, durable) and answers the fence. */
inline take_promise(l, r) {
  br[r].bgen = br[l].lg; br[r].bl = l; br[r].blcid = br[l].cid; br[r].blinc = br[l].inc;
#ifdef OLD_LEADER_APPENDS
  if :: br[r].ph == 1 -> go_idle(r) :: else fi;
#else
  if :: br[r].ph != 0 -> printf("  %d stops leading generation %d\n", r, br[r].lg); go_idle(r) :: else fi;
#endif
  br[l].prom = br[l].prom | BIT(r);
  if :: COUNTS(l, r) -> br[l].cnt = br[l].cnt | BIT(r); br[l].acid[r] = br[r].cid; br[l].agen[r] = RGEN(r); br[l].alen[r] = HELD(r)
     :: else fi;
  printf("FencePromise(%d<-%d): promised generation %d, rank (%d,%d), counted %d\n", l, r, br[l].lg,
         RGEN(r), HELD(r), (COUNTS(l, r) -> 1 : 0))
}

inline FencePromise(l, r) {
  d_step { l != r && UP(l) && UP(r) && br[l].ph == 1 && !br[l].cut && !br[r].cut && !(br[l].prom & BIT(r)) -> COVER(FencePromise);
    if
    :: OLD_INSTANCE(l, r) ->
       printf("FencePromise(%d<-%d): refused, the assignment is an older control-plane instance's\n", l, r);
       ftmo = 1; go_idle(l)
    :: !OLD_INSTANCE(l, r) && (br[r].bgen > br[l].lg || (br[r].bgen == br[l].lg && !NAMES(r, l))) ->
       printf("FencePromise(%d<-%d): refused, copy promised generation %d\n", l, r, br[r].bgen);
       if :: br[r].bgen > seen -> seen = br[r].bgen :: else -> ftmo = 1 fi;
       go_idle(l)
    :: else -> take_promise(l, r)
    fi;
    skip }
}

/* Review 5, item 5: the promise's ballot write fails (ENOSPC, EIO). The copy
   keeps in memory what is on disk, is refused until it is reopened and the
   boot token goes: for this one shard, its process is gone, and the next
   start rotates the ids. The twin keeps the promise in memory (it answers
   the fence, which counts it) while the file keeps the old ballot until the
   process restarts: a restarted copy then takes the old leader's appends. */
#if MAX_BWF > 0
inline PromiseWriteFails(l, r) {
  d_step { l != r && UP(l) && UP(r) && br[l].ph == 1 && !br[l].cut && !br[r].cut && !(br[l].prom & BIT(r)) &&
           FAULT && nbwf < MAX_BWF && !OLD_INSTANCE(l, r) &&
           !(br[r].bgen > br[l].lg || (br[r].bgen == br[l].lg && !NAMES(r, l))) -> COVER(PromiseWriteFails);
    nbwf++; nfault++;
#ifdef FAILED_WRITE_KEEPS_MEMORY
    printf("PromiseWriteFails(%d<-%d): the write fails; memory promises generation %d, the file keeps %d\n", l, r,
           br[l].lg, br[r].bgen);
    if :: !br[r].wf -> br[r].wf = 1; br[r].dbgen = br[r].bgen; br[r].dbl = br[r].bl; br[r].dblcid = br[r].blcid;
          br[r].dblinc = br[r].blinc
       :: else fi;
    take_promise(l, r);
#else
    printf("PromiseWriteFails(%d<-%d): the write fails: memory as on disk, copy refused, token removed\n", l, r);
    br[r].tok = 0; stop_process(r); br[r].rot = 1;
#endif
    skip }
}
#endif

#ifdef SHORTCUT_NO_ACTIVE
#define SHORTCUT(l) (prevg > 0 && br[l].lg == prevg + 1 && pl[prevg] == l && pcid[prevg] == br[l].cid && (br[l].cnt & BIT(l)))
#else
#define SHORTCUT(l) (prevg > 0 && br[l].lg == prevg + 1 && pl[prevg] == l && pcid[prevg] == br[l].cid && act[prevg] && (br[l].cnt & BIT(l)))
#endif
#ifdef RECLAIM_NO_MAJORITY
#define ENOUGH(l) (POP(br[l].cnt) >= MAJ || SHORTCUT(l) || br[l].rcl)
#else
#define ENOUGH(l) (POP(br[l].cnt) >= MAJ || SHORTCUT(l))
#endif

inline FenceEnd(l) {
  d_step { UP(l) && br[l].ph == 1 && OWNB(l) && ENOUGH(l) -> COVER(FenceEnd);
    vs = l;
    if :: !(br[l].cnt & BIT(l)) -> vs = NONE :: else fi;
    for (vi : 0 .. N-1) {
      if
      :: (br[l].cnt & BIT(vi)) && (vs == NONE || RANKGT(br[l].agen[vi], br[l].alen[vi], br[l].agen[vs], br[l].alen[vs])) -> vs = vi
      :: else
      fi
    }
    if :: vs == NONE -> vs = l :: else fi;
    /* vg: adopting vs would cut l's log below what an abandon kept there */
    vg = 0;
    if :: vs != l && br[l].ln > 0 -> ca = br[l].ln; cb = HELD(vs); common(l, vs);
          vg = (vt < br[l].ln && KEEP_REFUSES_CUT(l, vt) -> 1 : 0)
    :: else fi;
    if
    :: abg && br[l].lg == cgen && vs != l -> skip              /* abandon: a copy that promised outranks the chosen one */
    :: vs != l && (!UP(vs) || br[vs].cut) -> skip            /* wait for the source */
    :: vs != l && vg ->
       printf("FenceEnd(%d): refuses to adopt copy %d below what the abandon kept (%d)\n", l, vs, KEEP_OF(l));
       KEPT_CUT_ASKED(l)
    :: br[vs].cid != br[l].acid[vs] ->
       printf("FenceEnd(%d): source %d changed copy id, fence starts over\n", l, vs);
       go_idle(l)
    :: else ->
       if
       :: vs != l ->
          ca = br[l].ln; cb = HELD(vs); common(l, vs);
          below_start(l, vs);
          truncate_to(l, vt);
          for (vk : 0 .. L-1) { if :: vk >= vt && vk < HELD(vs) -> br[l].e[vk] = br[vs].e[vk] :: else fi }
          br[l].ln = HELD(vs);
          if :: MODE(l) -> br[l].syn = br[l].ln :: else fi
       :: else -> ca = HELD(l); truncate_to(l, ca)
       fi;
#ifdef NO_GEN_START_RECORD
       br[l].mark = br[l].ln;
#else
       if
       :: br[l].ln < L -> br[l].mark = br[l].ln; br[l].e[br[l].ln] = E(br[l].lg, 0); br[l].ln++
       :: else -> br[l].mark = br[l].ln; printf("  (log full: no room for the start record)\n")
       fi;
#endif
#ifdef NEW_LEADER_OWN_HWM
       if :: br[l].hwm > br[l].ln -> br[l].hwm = br[l].ln :: else fi;
#else
#ifdef STALE_FENCE_MEMBERS
#define FENCE_MAXHWM(l) maxhwm          /* whatever the newest assignment carries */
#else
#define FENCE_MAXHWM(l) br[l].fmh       /* its own generation's */
#endif
#ifdef STALE_FOLLOWER_HWM
       /* the old code: the larger of its own HWM and min(max HWM, held) */
       vc = (FENCE_MAXHWM(l) < HELD(l) -> FENCE_MAXHWM(l) : HELD(l));
       if :: vc > br[l].hwm -> br[l].hwm = vc :: else fi;
#else
       br[l].hwm = FENCE_MAXHWM(l);
#endif
#endif
       expose(l, 0);
       for (vk : 0 .. N-1) { br[l].cur[vk] = 0; br[l].ccid[vk] = NONE; br[l].cinc[vk] = 0 }
       vc = br[l].lg; idle_fence(l); br[l].lg = vc;
       br[l].ph = 2;
#if MAX_ROLL > 0
       br[l].srv = br[l].lg;
#endif
       printf("FenceEnd(%d): adopted copy %d, serves generation %d, log end %d, HWM %d\n",
              l, vs, br[l].lg, br[l].ln, br[l].hwm)
    fi;
    skip }
}

/* ---------------- control-plane restart and rollback ---------------- */
inline CPRestart() {
  d_step { FAULT && ncpr < MAX_CPR -> COVER(CPRestart); ncpr++; nfault++; cpwait = 1; invm = 0; invk = 0;
    printf("ControlPlaneRestart: waits for inventories\n"); skip }
}

#if MAX_ROLL > 0
inline snap_take() {
    nsnap = 1;
    s_cgen = cgen; s_prevg = prevg; s_maxhwm = maxhwm; s_hwmgen = hwmgen; s_seen = seen; s_asgi = asgi;
    for (vi : 0 .. MAXG) { s_pl[vi] = pl[vi]; s_pcid[vi] = pcid[vi]; s_pinc[vi] = pinc[vi]; s_act[vi] = act[vi] }
    for (vi : 0 .. N-1) { s_regcid[vi] = regcid[vi]; s_reginc[vi] = reginc[vi]; s_strg[vi] = strg[vi];
      s_mcid[vi] = mcid[vi]; s_mlen[vi] = mlen[vi]; s_mgen[vi] = mgen[vi]; s_fl[vi] = fl[vi];
      s_asgcid[vi] = asgcid[vi]; s_asgfl[vi] = asgfl[vi] }
}

/* SNAP_MAXG 0: the only backup is the one taken at stream creation (in init) */
inline CPSnapshot() {
  d_step { nsnap == 0 && cgen <= SNAP_MAXG -> COVER(CPSnapshot);
    snap_take();
    printf("CPSnapshot: backup of the control-plane database at generation %d\n", cgen);
    skip }
}

inline Rollback() {
  d_step { nsnap == 1 && FAULT && nroll < MAX_ROLL -> COVER(Rollback);
    nroll++; nfault++;
    for (vi : 0 .. MAXG) { pl[vi] = s_pl[vi]; pcid[vi] = s_pcid[vi]; pinc[vi] = s_pinc[vi]; act[vi] = s_act[vi] }
    for (vi : 0 .. N-1) { regcid[vi] = s_regcid[vi]; reginc[vi] = s_reginc[vi]; strg[vi] = s_strg[vi];
      mcid[vi] = s_mcid[vi]; mlen[vi] = s_mlen[vi]; mgen[vi] = s_mgen[vi]; fl[vi] = s_fl[vi];
      asgcid[vi] = s_asgcid[vi]; asgfl[vi] = s_asgfl[vi] }
    /* ghost: the records the restored database no longer knows were committed
       (offsets from the restored maximum HWM up to the one it loses) */
    for (vk : 0 .. L-1) { if :: vk >= s_maxhwm && vk < maxhwm && vk < chwm -> rbx[vk] = 1 :: else fi }
    printf("Rollback: maximum HWM %d -> %d (offsets in between: the admitted loss)\n", maxhwm, s_maxhwm);
    cgen = s_cgen; prevg = s_prevg; maxhwm = s_maxhwm; hwmgen = s_hwmgen; seen = s_seen;
    asgi = s_asgi; cpi++;             /* a new instance; the restored assignment is an old one's */
    drain = 0; ftmo = 0; rclg = 0; abg = 0;
    cpwait = 1; invm = 0; invk = 0;
    if
    :: nroll == MAX_ROLL ->        /* the backup is never read again: canonical zeros */
       s_cgen = 0; s_prevg = 0; s_maxhwm = 0; s_hwmgen = 0; s_seen = 0; s_asgi = 0;
       for (vi : 0 .. MAXG) { s_pl[vi] = 0; s_pcid[vi] = 0; s_pinc[vi] = 0; s_act[vi] = 0 }
       for (vi : 0 .. N-1) { s_regcid[vi] = 0; s_reginc[vi] = 0; s_strg[vi] = 0;
         s_mcid[vi] = 0; s_mlen[vi] = 0; s_mgen[vi] = 0; s_fl[vi] = 0;
         s_asgcid[vi] = 0; s_asgfl[vi] = 0 }
    :: else
    fi;
    printf("Rollback: control-plane database restored to generation %d; waits for inventories\n", cgen);
    skip }
}

#endif

/* a live broker sees the new instance id and re-sends its inventory (same incarnation) */
inline Reinventory(b) {
  d_step { cpwait && UP(b) && !br[b].cut && !(invm & BIT(b)) -> COVER(Reinventory);
    printf("Reinventory(%d): ballot generation %d, rank (%d,%d)\n", b, br[b].bgen, RGEN(b), HELD(b));
    inventory_in(b);
    reginc[b] = br[b].inc;
    skip }
}

/* ---------------- the system ---------------- */
#define PER_B(A) :: A(0) :: A(1) :: A(2)
#define PER_LF(A) :: A(0,1) :: A(0,2) :: A(1,0) :: A(1,2) :: A(2,0) :: A(2,1)

init {
  /* stream created: generation 1 pinned to broker 0, every copy measured at (0,0), floor 0 */
  d_step {
    for (vi : 0 .. N-1) {
      br[vi].sid = vi + 1; br[vi].bsid = vi + 1; br[vi].cid = vi + 1; br[vi].inc = vi + 1; br[vi].tok = 1;
      br[vi].bad = NOBAD; br[vi].bgen = 1; br[vi].bl = 0; br[vi].blcid = 1; br[vi].blinc = 1;
      regcid[vi] = vi + 1; reginc[vi] = vi + 1; lease[vi] = 1;
      mcid[vi] = vi + 1; icid[vi] = vi + 1; asgcid[vi] = vi + 1;
      for (vj : 0 .. N-1) { br[vi].ccid[vj] = NONE }
    }
    for (vj : 1 .. N-1) { br[0].ccid[vj] = vj + 1; br[0].cinc[vj] = vj + 1 }
    cgen = 1; seen = 1; pl[1] = 0; pcid[1] = 1; pinc[1] = 1; act[1] = 1;
    br[0].lg = 1; br[0].ph = 2; br[0].mark = NONE;
#if MAX_ROLL > 0
    br[0].srv = 1;
#if SNAP_MAXG == 0
    snap_take();
#endif
#endif
    skip
  }
  do
  PER_B(Append)
  PER_B(Flush)
  PER_LF(Handshake)
  PER_LF(Ship)
#if MAX_TRIM > 0
  PER_B(Trim)
  PER_LF(FollowTrim)
#endif
  :: Acknowledge(0, 1) :: Acknowledge(1, 1) :: Acknowledge(2, 1)
#if NV >= 2
  :: Acknowledge(0, 2) :: Acknowledge(1, 2) :: Acknowledge(2, 2)
#endif
#if NV >= 3
  :: Acknowledge(0, 3) :: Acknowledge(1, 3) :: Acknowledge(2, 3)
#endif
#if NV >= 4
  :: Acknowledge(0, 4) :: Acknowledge(1, 4) :: Acknowledge(2, 4)
#endif
  PER_B(Commit)
  PER_B(Report)
  PER_B(Register)
  PER_B(Crash)
  PER_B(CrashLoseSid)
  PER_B(ProcessKill)
  PER_B(SyncError)
#ifdef TOKEN_AFTER_ERROR
  PER_B(FailClosedLate)
#endif
  PER_B(Evict)
  PER_B(Wipe)
  PER_B(DeleteShardDir)
  PER_B(RollbackSameIds)
  PER_B(LeaseLapse)
  PER_B(Heartbeat)
  PER_B(Partition)
  PER_B(Heal)
  PER_B(Drain)
#if MAX_NQ > 0
  PER_B(RenewLease)
  PER_B(LeaseExpire)
  PER_B(NoQuorum)
  PER_B(NoQuorumWaitOver)
#endif
  PER_B(Promote)
  :: Reclaim()
#if MAX_ABANDON > 0
  PER_B(Abandon)
#endif
  :: RackPowerLoss()
  PER_B(FenceStart)
  PER_LF(FencePromise)
#if MAX_BWF > 0
  PER_LF(PromiseWriteFails)
#endif
  PER_B(FenceEnd)
  :: CPRestart()
#if MAX_ROLL > 0
  :: CPSnapshot()
  :: Rollback()
#endif
  PER_B(Reinventory)
  od
}
