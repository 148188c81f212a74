/* A model of the deduction protocol, checked exhaustively by spin (issue 23).

   The world, kept small so that every interleaving is explored:
   - one goods id seeded with SEED units;
   - order A (1 unit) whose flag is sent up to twice (a retry after a timeout, or after the
     stock service said it does not know the flag), and order B (2 units), sent once: A and B
     cannot both be served, so a refusal for lack of stock is in the model;
   - two stock workers; the lock on the goods id hands out a growing token; a holder can be
     paused past its ZooKeeper session and lose the lock without knowing (another worker then
     takes it with a newer token); a worker may serve a second request of its lane under the
     same hold (the second part of a split batch, same token);
   - the stock row's fence: the write is a compare-and-set, SET num, fence = token WHERE
     fence = <the fence read>, and only if that fence is not above the token (decide.py);
   - the Redis flag (can be lost once), the decision row (primary key flag) and the flow row
     (unique per flag and goods id), modelled together: an insert fails if the flag has one;
   - two elected reconcilers with their own fence: each settles the PENDING orders whose
     request has ended (void, then write the order under its leader token); a leader can be
     paused and deposed, and the other one elected with a newer token;
   - a buyer pays a CONFIRMED order (a hold): an order still moves after it is settled, which
     is what a deposed reconciler could overwrite.

   Guards, each removable at compile time, each removal a counterexample (model_check.py):
     -DNO_FENCE             the level written last-writer-wins (FENCING=false)
     -DFENCE_LE_ONLY        the fence checked only as "row fence <= my token", not "= read"
     -DNO_UNIQUE_ROW        the decision/flow insert never fails (no unique key)
     -DFLAG_ONLY            the Redis pre-filter trusted alone: no decision read under the
                            lock and no unique key
     -DNO_STATUS_CAS        a reconciler's order write is a plain write, not a compare-and-set
                            from PENDING (transitions.move's WHERE status IN was)
     -DNO_RECONCILER_FENCE  a reconciler's write is not fenced by its leader token: NOT a
                            counterexample here, because the status compare-and-set covers it
                            (every settle moves an order out of PENDING, and nothing moves it
                            back); with the fence alone (-DNO_STATUS_CAS) the intact fence does
                            not help either: a newer leader's stale read overwrites a payment

   Simplifications, said once: the lease check before the commit is left out (a pause after it
   is what makes a holder stale, and the fence must cope alone); a request the order service
   gave up on may still run, and its answer is then lost. */

#ifndef SEED
#define SEED 2
#endif
#define NORDERS 2          /* A = 0, B = 1 */
#define NATTEMPTS 3        /* A's two attempts (0, 1), B's one (2) */
#define MAX_SESSION_LOSSES 1
#define MAX_LEADER_LOSSES 1

mtype = {
    NONE,
    /* decisions of the stock database, answers of the stock service */
    DEDUCTED, DUPLICATE, INSUFFICIENT, VOIDED, UNKNOWN_FLAG, LOCK_LOST, NO_ANSWER, WAITING,
    /* order statuses (and what the buyer was told) */
    PENDING, CONFIRMED, PAID, FAILED
};

chan req = [NATTEMPTS] of { byte, byte };   /* flag (= order), attempt */
mtype answer[NATTEMPTS];

/* the stock database */
int num = SEED;
byte row_fence = 0;
mtype decided[NORDERS];        /* the flag's first decision row: NONE, DEDUCTED, VOIDED */
byte flows[NORDERS];           /* flow rows per flag (one goods id) */
byte qty[NORDERS];

/* the lock service */
byte lock_holder = 0;          /* worker id, 0: free */
byte lock_tokens = 0;
byte session_losses = 0;
byte working = 0;              /* workers inside a hold (stale holders too) */

/* Redis */
bool redis[NORDERS];

/* the order database, and what each buyer was last told */
mtype status[NORDERS];
mtype told[NORDERS];
bool placed[NORDERS];          /* the order's request has ended: the reconciler may settle it */
byte recon_fence = 0;

/* the election */
byte leader = 0;
byte leader_tokens = 0;
byte leader_losses = 0;

/* The stock database's void (store.void): decide the flag voided unless it is decided; the
   decision after. Needs no lock: the primary key orders it against a deduction's insert. The
   stock service forgets the flag in Redis too. */
inline void_flag(f, d) {
    if
    :: decided[f] == NONE -> decided[f] = VOIDED
    :: else -> skip
    fi;
#if defined(NO_UNIQUE_ROW) || defined(FLAG_ONLY)
    d = VOIDED;                /* without the key the insert never fails: it believes its row */
#else
    d = decided[f];
#endif
    redis[f] = 0
}

/* The read of one part of a hold (in the step that reads): the level, the row's fence and the
   flag's decision, then the plan. `out` is the answer when nothing is to be written (answered
   at once), NONE when a write follows. */
inline read_and_plan(w, f, a) {
    lvl = num; seen = row_fence; dec = decided[f];
    printf("STEP worker %d reads for order %c: stock %d, row fence %d, decision %e\n",
           w, 'A' + f, lvl, seen, dec);
    /* then a pause past the session: the lock passes on and this holder does not know (in
       the step of the read: a pause later is this one with the others slower) */
    if
    :: lock_holder == w && session_losses < MAX_SESSION_LOSSES ->
       lock_holder = 0; session_losses++;
       printf("STEP worker %d is paused past its session: it loses the lock unaware\n", w)
    :: true -> skip
    fi;
#ifdef FLAG_ONLY
    dec = NONE;                /* the pre-filter let it in: nothing else is asked */
#endif
    if
    :: dec == DEDUCTED -> out = DUPLICATE
    :: dec == VOIDED -> out = VOIDED
    :: dec == NONE && lvl < qty[f] -> out = INSUFFICIENT
    :: dec == NONE && lvl >= qty[f] -> out = NONE
    fi;
    if :: out != NONE -> answer_attempt(w, f, a) :: else -> skip fi
}

/* One write transaction: the fenced level, the flow and decision rows (decide.py). `out`:
   DEDUCTED, LOCK_LOST (refused by the fence), or NO_ANSWER: overtaken by an older holder or
   the flag decided since the read, so read again. */
inline write_rows(w, f, tok) {
    out = NONE;
#if defined(NO_FENCE)
    skip;
#elif defined(FENCE_LE_ONLY)
    if
    :: row_fence > tok -> out = LOCK_LOST
    :: else -> skip
    fi;
#else
    if
    :: seen > tok || (row_fence != seen && row_fence > tok) -> out = LOCK_LOST
    :: row_fence != seen && row_fence <= tok ->
       printf("STEP worker %d: the row was overtaken by an older holder, reads again\n", w);
       out = NO_ANSWER
    :: else -> skip
    fi;
#endif
#if !defined(NO_UNIQUE_ROW) && !defined(FLAG_ONLY)
    if
    :: out == NONE && (decided[f] != NONE || flows[f] > 0) ->
       printf("STEP worker %d: the unique key finds order %c decided, reads again\n", w, 'A' + f);
       out = NO_ANSWER
    :: else -> skip
    fi;
#endif
    if
    :: out == NONE ->
       num = lvl - qty[f];
#ifndef NO_FENCE
       row_fence = tok;
#endif
       flows[f]++;
       if :: decided[f] == NONE -> decided[f] = DEDUCTED :: else -> skip fi;
       assert(num >= 0);
       out = DEDUCTED;
       printf("STEP worker %d commits order %c with token %d: stock %d, flows %d\n",
              w, 'A' + f, tok, num, flows[f])
    :: out == LOCK_LOST ->
       printf("STEP worker %d's write is refused by the fence %d (its token %d)\n",
              w, row_fence, tok)
    :: else -> skip
    fi
}

/* The rest of one part, after its read: write, answer; read again if told to. */
inline write_and_answer(w, f, a, tok) {
    do
    :: out != NONE -> break
    :: atomic {
           out == NONE ->
           write_rows(w, f, tok);
           if
           :: out == NO_ANSWER -> read_and_plan(w, f, a)
           :: else -> answer_attempt(w, f, a)
           fi
       }
    od
}

/* The stock service's answer to one attempt; the flag is forgotten in Redis once decided. */
inline answer_attempt(w, f, a) {
    if :: out != LOCK_LOST -> redis[f] = 0 :: else -> skip fi;
    answer[a] = out;
    printf("STEP worker %d answers attempt %d of order %c: %e\n", w, a, 'A' + f, out)
}

/* A request whose flag is not live in Redis is answered from the stock database. */
inline answer_from_database(w, f, a) {
    if
    :: decided[f] == DEDUCTED -> out = DUPLICATE
    :: decided[f] == VOIDED -> out = VOIDED
    :: else -> out = UNKNOWN_FLAG
    fi;
    answer[a] = out;
    printf("STEP worker %d: flag %c not in Redis, answers attempt %d from the database: %e\n",
           w, 'A' + f, a, out)
}

/* The end of a hold: the lock released (unless lost), and the request forgotten, so idle
   workers are one state whatever they served. */
inline release(w) {
    if :: lock_holder == w -> lock_holder = 0 :: else -> skip fi;
    f = 0; a = 0; tok = 0; lvl = 0; seen = 0; dec = NONE; out = NONE
}

/* A stock worker: a request (the pre-filter), the lock, its read-check-write; maybe one more
   request of its lane under the same hold (the second part of a split batch, same token). */
proctype worker(byte w) {
    byte f, a, tok, lvl, seen;
    mtype dec = NONE, out = NONE;
end_idle:
    do
    :: atomic {
           req?f, a ->
           if
           :: !redis[f] -> answer_from_database(w, f, a); release(w); goto end_idle
           :: else ->
              working++;
              printf("STEP worker %d: flag %c is live, attempt %d goes to the lock\n", w, 'A' + f, a)
           fi
       };
       atomic {
           lock_holder == 0 -> lock_holder = w; lock_tokens++; tok = lock_tokens;
           printf("STEP worker %d takes the lock, token %d\n", w, tok);
           read_and_plan(w, f, a)
       };
       write_and_answer(w, f, a, tok);
       if
       :: atomic {
              req?f, a ->
              if
              :: !redis[f] -> answer_from_database(w, f, a); release(w); working--; goto end_idle
              :: else ->
                 printf("STEP worker %d serves attempt %d of order %c as the second part of its batch (token %d)\n", w, a, 'A' + f, tok);
                 read_and_plan(w, f, a)
              fi
          };
          write_and_answer(w, f, a, tok);
          atomic { release(w); working-- }
       :: atomic { release(w); working-- }
       fi
    od
}

/* What the order service does with an attempt's answer: call again (a timeout, a lost lock,
   or a flag the stock service does not know, written again), or stop calling. */
inline next_call() {
    if
    :: a + 1 < first + attempts && r == UNKNOWN_FLAG ->
       redis[o] = 1; printf("STEP order %c writes its flag again\n", 'A' + o); a++; r = NONE
    :: a + 1 < first + attempts && (r == NO_ANSWER || r == LOCK_LOST) -> a++; r = NONE
    :: else -> calling = false
    fi
}

/* The order service's place(): PENDING, the flag, the stock calls, the outcome. */
proctype buyer(byte o; byte first; byte attempts) {
    byte a = first;
    bool calling = true;
    mtype r = NONE, d = NONE, final = NONE;
    atomic { redis[o] = 1; printf("STEP order %c is PENDING, its flag written\n", 'A' + o) };
    do
    :: /* the call, and whether the order service will wait for its answer: giving up now is
          giving up later with the others quicker (the attempt runs on either way) */
       atomic {
           calling && r == NONE ->
           req!o, a;
           printf("STEP order %c sends attempt %d\n", 'A' + o, a);
           if
           :: r = WAITING
           :: r = NO_ANSWER;
              printf("STEP order %c gives up waiting on attempt %d\n", 'A' + o, a);
              next_call()
           fi
       }
    :: atomic { r == WAITING && answer[a] != NONE -> r = answer[a]; next_call() }
    :: atomic { !calling ->
       /* the outcome, and the order's row: the answer is made from the row as the write left
          it (a compare-and-set from PENDING; a reconciler may have settled it first) */
       if
       :: r == DEDUCTED -> final = CONFIRMED
       :: r == INSUFFICIENT || r == VOIDED -> final = FAILED
       :: else ->
          /* duplicate, unknown flag, no answer: read the flows; none: ask the stock service
             to settle the flag (void), which may get no answer either: PENDING */
          if
          :: flows[o] > 0 -> final = CONFIRMED
          :: flows[o] == 0 ->
             void_flag(o, d);
             if :: d == DEDUCTED -> final = CONFIRMED :: else -> final = FAILED fi;
             printf("STEP order %c voids its flag: the stock database says %e\n", 'A' + o, d)
          :: flows[o] == 0 -> final = PENDING
          fi
       fi;
       if :: status[o] == PENDING -> status[o] = final :: else -> skip fi;
       told[o] = status[o];
       placed[o] = 1;
       printf("STEP order %c: the buyer is told %e\n", 'A' + o, told[o]);
       a = 0; r = NONE; d = NONE; final = NONE
       };
       break
    od;
    /* the buyer of A pays it once it is CONFIRMED (a hold), maybe after a reconciler settled it */
    if
    :: atomic { o == 0 && status[o] == CONFIRMED -> status[o] = PAID; told[o] = PAID;
                printf("STEP order %c is paid: the buyer is told PAID\n", 'A' + o) }
    :: true
    fi
}

/* One pass of an elected reconciler over the orders whose request has ended. */
proctype reconciler(byte r) {
    byte tok = 0, o = 0;
    mtype d = NONE, outcome = NONE;
    /* it settles orders older than a request's whole budget, "so no request of it is still
       running" (reconcile.py): the buyers' calls have ended and their attempts too (a void
       racing a late attempt is the buyer's own void, above) */
    atomic {
        leader == 0 && placed[0] && placed[1] && len(req) == 0 && working == 0 ->
        leader = r; leader_tokens++; tok = leader_tokens;
        printf("STEP reconciler %d is elected, token %d\n", r, tok)
    };
    do
    :: o < NORDERS ->
       if
       :: atomic {
              status[o] == PENDING ->
              void_flag(o, d);
              if :: d == DEDUCTED -> outcome = CONFIRMED :: else -> outcome = FAILED fi;
              printf("STEP reconciler %d finds order %c PENDING, voids: %e\n", r, 'A' + o, d);
              /* then a pause inside the pass: deposed, unable to tell */
              if
              :: leader == r && leader_losses < MAX_LEADER_LOSSES ->
                 leader = 0; leader_losses++;
                 printf("STEP reconciler %d is paused and deposed unaware\n", r)
              :: true -> skip
              fi
          };
          /* one transaction of the order database (transitions.move) */
          atomic {
#ifndef NO_RECONCILER_FENCE
              if
              :: recon_fence > tok ->
                 printf("STEP reconciler %d's write is refused by the fence %d (its token %d)\n",
                        r, recon_fence, tok);
                 outcome = NONE          /* Superseded: nothing written, the pass ends */
              :: else -> recon_fence = tok
              fi;
#endif
#ifndef NO_STATUS_CAS
              if
              :: outcome != NONE && status[o] == PENDING ->
                 status[o] = outcome;
                 printf("STEP reconciler %d writes order %c %e\n", r, 'A' + o, outcome)
              :: outcome != NONE && status[o] != PENDING ->
                 printf("STEP reconciler %d finds order %c moved on (%e): writes nothing\n",
                        r, 'A' + o, status[o])
              :: else -> skip
              fi;
#else
              if
              :: outcome != NONE ->
                 status[o] = outcome;
                 printf("STEP reconciler %d writes order %c %e\n", r, 'A' + o, outcome)
              :: else -> skip
              fi;
#endif
              if :: outcome == NONE -> o = NORDERS :: else -> o++ fi;
              d = NONE; outcome = NONE
          }
       :: atomic { status[o] != PENDING -> o++ }
       fi
    :: else -> break
    od;
    atomic { if :: leader == r -> leader = 0 :: else -> skip fi; tok = 0; o = 0 }
}

/* Redis may lose a flag (a restart, a failover): A's, whose buyer can write it again. */
proctype redis_loss() {
    if
    :: atomic { redis[0] -> redis[0] = 0; printf("STEP Redis loses flag A\n") }
    :: skip
    fi
}

init {
    byte o;
    atomic {
        qty[0] = 1; qty[1] = 2;
        for (o : 0 .. NORDERS - 1) {
            decided[o] = NONE; status[o] = PENDING; told[o] = NONE
        }
        for (o : 0 .. NATTEMPTS - 1) { answer[o] = NONE }
        run buyer(0, 0, 2);
        run buyer(1, 2, 1);
        run worker(1);
        run worker(2);
        run reconciler(1);
        run reconciler(2);
        run redis_loss()
    };
    timeout ->
    /* every process has ended or waits for work: the end state */
    printf("STEP end: stock %d, flows A %d B %d, orders %e %e, told %e %e\n",
           num, flows[0], flows[1], status[0], status[1], told[0], told[1]);
    assert(num >= 0);
    assert(SEED - num == flows[0] * qty[0] + flows[1] * qty[1]);   /* no lost update */
    for (o : 0 .. NORDERS - 1) {
        assert(flows[o] <= 1);                                     /* one deduction per flag */
        assert(told[o] != CONFIRMED || (flows[o] == 1 && status[o] == CONFIRMED));
        assert(told[o] != PAID || (flows[o] == 1 && status[o] == PAID));
        assert(told[o] != FAILED || (flows[o] == 0 && status[o] == FAILED
                                     && (decided[o] == VOIDED || !redis[o])));
        assert((status[o] != CONFIRMED && status[o] != PAID) || flows[o] == 1);
        assert(status[o] != FAILED || flows[o] == 0)
    }
}
