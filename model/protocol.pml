/* A model of the deduction protocol, checked exhaustively by spin (the fence, and refusals that stay refusals).

   The world, kept small so that every interleaving is explored:
   - one goods id seeded with SEED units;
   - order A (1 unit) whose flag is sent up to twice (a retry after a timeout, or after the
     stock service said it does not know the flag), and order B (2 units), sent once: A and B
     cannot both be served, so a refusal for lack of stock is in the model;
   - stock that comes back: the buyer of B may cancel it once it is CONFIRMED (a compare-and-set
     CONFIRMED -> CANCELLING, then the stock service's return of the flag, then CANCELLED). The
     return is served by a stock worker like a deduction: the flag's decision read first (none:
     voided, an empty rollback), then the lock, the read, and one write transaction: the level
     up by exactly B's quantity under the row's fence, the decision moved deducted -> returned
     by a compare-and-set. So A can be refused while B holds the stock, and find it back later;
   - two stock workers; the lock on the goods id hands out a growing token; a holder can be
     paused past its ZooKeeper session and lose the lock without knowing (another worker then
     takes it with a newer token); a worker may serve a second request of its lane under the
     same hold (the second part of a split batch, same token). A worker takes a request (the
     Redis pre-filter) and then waits for the lock: an attempt the order service gave up on may
     pass the pre-filter, wait, and run after its order was answered (the late attempt);
   - the stock row's fence: the write is a compare-and-set, SET num, fence = token WHERE
     fence = <the fence read>, and only if that fence is not above the token (decide.py);
   - the Redis flag (can be lost once), the decision row (primary key flag: deducted, voided,
     refused, returned) and the flow row (unique per flag and goods id), modelled together: an
     insert fails if the flag has one. A refusal for lack of stock is a decision (refused),
     written in the transaction of the hold that refused it; it writes no level, so it needs
     no fence: the primary key orders it against any other attempt's insert;
   - two elected reconcilers with their own fence, making passes (NPASSES, counted across
     leaders: the order's age): each pass settles the PENDING orders whose request has ended,
     by the flag's decision; an undecided flag is written again and the deduction made again
     under it (a call served by a stock worker, like the buyer's, whose answer the first pass
     may give up on: it runs on into the next pass), or, from pass VOID_PASS on (past
     RECONCILE_VOID_AFTER), voided by a call of its own after the read, which a late deduction
     may beat; then the order is written under the leader token. A leader can be paused and
     deposed (its deduction still at work), and the other one elected with a newer token. Two
     passes by default (deduct again, then void); -DNPASSES=3 -DVOID_PASS=2, three (deduct
     again twice, then void), 2.4 times the states;
   - A is a hold: deducted, it is AWAITING payment, and its buyer pays it (a compare-and-set
     from AWAITING before its deadline): an order still moves after it is settled, which is
     what a deposed reconciler could overwrite;
   - with -DHOLDS (in place of the reconcilers and the Redis loss, like the restock world, and
     of B's cancel), the hold expires: an expiry (the reconciler's pages of holds past their
     deadline and of CANCELLING orders, a process here) moves A from AWAITING to CANCELLING by
     a compare-and-set whose condition has the deadline passed, then asks A's stock back like
     a cancel (a return served by a stock worker under the lock and the fence), then CANCELLED;
     a CANCELLING order's return is asked again. It races A's pay (before the deadline) and
     A's cancel (which, finding the order CANCELLING, asks the return too: two returns of one
     flag at work). With -DRESTOCK too, B is left out (with it the search passed 34 million
     states unfinished), and the restock meets the expiry's return;
   - the stock row's last ledger entry (row_seq): every level write moves it, and the fenced
     write matches it too (WRITE_FENCED: WHERE fence = <read> AND ledger_seq = <read>).

   With -DRESTOCK (stock as a ledger), the world has an admin who brings one unit in
   and enters it as an adjustment (POST /stock/{goodsId}/adjustments): a request of the same
   batches as the orders', served by a stock worker under the lock and the fence, written with
   the level it leaves (one ledger line, no flag, no decision row): a restock, {"delta": 1}, or
   with -DCOUNT a count, {"expected": <the level read>, "num": <the units counted>}, which a
   level moved since the read makes stale (nothing written). It is sent at any moment, so it
   meets every deduction, refusal and return of the orders, as the first or second part of a
   hold, before or after a holder's pause. The unit makes A and B fit together (3 units), so a
   refused A can find stock back through the restock instead of a return. Left out of that
   world to keep it checkable (with them the search passed 28 million states unfinished):
   the reconcilers, which start once every request has ended and touch no stock row (their
   pass and an adjustment read and write disjoint variables, so every order of the two is the
   same), and the Redis loss (a flag, not a level). The world without -DRESTOCK is the one
   before, unchanged.

   Guards, each removable at compile time, each removal a counterexample (model_check.py;
   the variants are in inventory/model_variants.py):
     -DNO_FENCE             the level written last-writer-wins (FENCING=false)
     -DFENCE_LE_ONLY        the fence checked only as "row fence <= my token", not "= read"
     -DNO_UNIQUE_ROW        the decision/flow insert never fails (no unique key)
     -DFLAG_ONLY            the Redis pre-filter trusted alone: no decision read under the
                            lock and no unique key
     -DNO_STATUS_CAS        a reconciler's order write is a plain write, not a compare-and-set
                            from PENDING (transitions.move's WHERE status IN was)
     -DREFUSAL_NOT_RECORDED a refusal for lack of stock writes no decision (the rule before
                            refusals were recorded): it deletes the flag from Redis and answers insufficient,
                            and an attempt that passed the pre-filter before that runs later,
                            finds no decision, and deducts once a return has brought the stock
                            back: the buyer was told FAILED and the order has a flow
   In the world with -DRESTOCK:
     -DFENCE_WITHOUT_SEQ    the fenced write matches the row's fence only (the code until this
                            model found the hole): a hold that writes a row twice (a split batch) leaves its own
                            token on it both times, so a newer holder that read between the two
                            writes finds the fence it read and writes over the second: a lost
                            update (found by this model: the restock lets A and B both fit)
     -DADJUST_UNFENCED      the adjustment's level written last-writer-wins: a restock written
                            on its read overwrites a (stale holder's) deduction that landed
                            since (a lost update, the ledger unbalanced)
     -DCAS_IGNORES_EXPECTED (with -DCOUNT) a count applied whatever the level under the lock,
                            not only at the level it expected: a deduction between the admin's
                            read and the write is undone. The ledger still balances (the entry's
                            delta is against the level read under the lock); the level no longer
                            says what is there
     -DRECONCILER_NEW_FLAG  the reconciler places an order left PENDING again under a new flag,
                            without asking the stock database about the old one (the rule the
                            the reconcilers' settlement must not be): a late attempt that deducted
                            under the old flag after the buyer gave up makes two deductions
     -DPASS_NEW_FLAG        (with -DNPASSES=3 -DVOID_PASS=2) a pass after the first deducts an
                            order still undecided again under a new flag: the first pass's
                            deduction, given up on, lands late, and the order is deducted twice
   In the world with -DHOLDS:
     -DEXPIRY_NO_STATUS_CAS the expiry a plain write past the deadline, trusting its page read:
                            a buyer who paid before the deadline is told PAID, and the expiry
                            then moves the order to CANCELLING and returns its stock
     -DRETURN_NOT_ONCE      a return served whatever the flag's decision under the lock (plan's
                            "returned before" and mark_returned's compare-and-set removed): the
                            cancel's and the expiry's returns of one hold both return its stock
     -DNO_RECONCILER_FENCE  a reconciler's write is not fenced by its leader token: NOT a
                            counterexample here, because the status compare-and-set covers it
                            (every settle moves an order out of PENDING, and nothing moves it
                            back); with the fence alone (-DNO_STATUS_CAS) the intact fence does
                            not help either: a newer leader's stale read overwrites a payment

   Simplifications, said once: the lease check before the commit is left out (a pause after it
   is what makes a holder stale, and the fence must cope alone); a request the order service
   gave up on may still run, and its answer is then lost; B is cancelled only once CONFIRMED,
   A (in the holds world) only once AWAITING (a cancel racing its own placement is left out);
   a return refused by the fence (lock lost) leaves B CANCELLING, which the reconciler would
   finish by asking again (modelled for A's in the holds world: the expiry asks it again).

   Probes too: -DWITNESS_SECOND_PASS (the void of the pass past the bound meets an earlier
   pass's deduction landing late: the order is settled by it), -DWITNESS_EXPIRY (with -DHOLDS:
   a cancel and the expiry both ask the hold's stock back, both answered RETURNED, and it comes
   back once), -DWITNESS_EXPIRY_RESTOCK (with -DHOLDS -DRESTOCK: the expired hold's return
   lands on a level the restock moved).
   Not a guard either: -DWITNESS_RECONCILER_DEDUCTS, a probe whose assertion fails where,
   intact, a reconciler's deduction again of an undecided order deducts: the story of an order deducted again by the reconcilers
   (no sale lost to an unknown outcome) is reachable, so "no violation" covers it.
   Not a guard: -DWITNESS_LATE_ATTEMPT is a probe (tests/unit/test_model_check.py) whose
   assertion fails where, intact, the late attempt after a refusal reads the refusal recorded with
   the stock back: spin reaching it shows the intact model's "no violation" covers that story.
   -DWITNESS_LATE_ATTEMPT_RESTOCK (with -DRESTOCK) is the same probe with the stock back through
   the restock, B never returned: the refusal stays a refusal when stock comes in. */

#ifndef SEED
#define SEED 2
#endif
#define NORDERS 2          /* A = 0, B = 1 */
#define HOLD(o) (o == 0)   /* A is a hold (payWithinSeconds): deducted, it awaits payment */
#ifndef NPASSES
#define NPASSES 2          /* the reconcilers' passes, counted across leaders: an order's age */
#endif
#ifndef VOID_PASS
#define VOID_PASS 1        /* RECONCILE_VOID_AFTER: from this pass an undecided order is voided;
                              before it, its deduction is made again */
#endif
#ifndef EXPIRY_PASSES
#define EXPIRY_PASSES 2    /* the passes over holds past their deadline and CANCELLING orders */
#endif
#define NCALLS 14          /* A's two attempts (0, 1), B's one (2), the admin's adjustment (3),
                              B's return by its buyer's cancel (4), A's by its buyer's cancel
                              (5) and by the expiry's passes (6, 7), the reconcilers' deductions
                              again, pass p of order o (8 + p * NORDERS + o) */
#define ADJUST_CALL 3      /* the call that is an adjustment of the level (a restock, a count) */
#define RETURN_B_CALL 4    /* the calls that are a return of an order's stock, not a deduction */
#define RETURN_A_CALL 5
#define EXPIRY_CALL 6
#define RECON_CALL 8       /* the first of the reconcilers' deductions again */
#ifdef HOLDS
#define HOLDS_WORLD true   /* the buyer of A may cancel its hold, which may expire */
#else
#define HOLDS_WORLD false
#endif
#define RETURNING(a) (a >= RETURN_B_CALL && a < RECON_CALL)
#define DEDUCTION(a) (a < ADJUST_CALL || a >= RECON_CALL)
/* a deduction under a flag of its own (-DRECONCILER_NEW_FLAG): the order's decision and flow
   rows are not its flag's, so neither is read nor met. The rest (the Redis flag, the decision
   it writes) stays keyed by the order: less than a new flag would change, and enough for the
   counterexample (the second deduction) */
#if defined(RECONCILER_NEW_FLAG)
#define OWN_FLAG(a) (a < RECON_CALL)
#elif defined(PASS_NEW_FLAG)
#define OWN_FLAG(a) (a < RECON_CALL + NORDERS)    /* the first pass's own, the later ones new */
#else
#define OWN_FLAG(a) true
#endif
/* The fenced write's compare-and-set finds the row as read: its fence and its last ledger
   entry (WRITE_FENCED). The fence alone is not enough: a hold that writes a row twice (a
   split batch) leaves its own token on it both times, so a newer holder that read between the
   two writes would find the fence it read and write over the second (-DFENCE_WITHOUT_SEQ). */
#ifdef FENCE_WITHOUT_SEQ
#define ROW_MOVED (row_fence != seen)
#else
#define ROW_MOVED (row_fence != seen || row_seq != seen_seq)
#endif
#define MAX_SESSION_LOSSES 1
#define MAX_LEADER_LOSSES 1

mtype = {
    NONE,
    /* decisions of the stock database, answers of the stock service */
    DEDUCTED, DUPLICATE, INSUFFICIENT, VOIDED, UNKNOWN_FLAG, LOCK_LOST, NO_ANSWER, WAITING,
    REFUSED, RETURNED, ADJUSTED, STALE,
    /* order statuses (and what the buyer was told); CANCELLED is an answer too */
    PENDING, AWAITING, CONFIRMED, PAID, FAILED, CANCELLING, CANCELLED
};

chan req = [NCALLS] of { byte, byte };   /* flag (= order), call */
mtype answer[NCALLS];

/* the stock database */
int num = SEED;
byte row_fence = 0;
byte row_seq = 0;              /* the row's last ledger entry: every level write moves it */
mtype decided[NORDERS];        /* the flag's decision row: NONE, DEDUCTED, VOIDED, REFUSED,
                                  RETURNED (DEDUCTED -> RETURNED is its only move) */
byte flows[NORDERS];           /* flow rows per flag (one goods id) */
byte returns[NORDERS];         /* return rows per flag */
byte qty[NORDERS];

/* the adjustments (the ledger's adjustment rows) and what they stand for: a unit that came in
   (a delivery, or one found by a count) is there to sell from the moment it arrives, and is
   in the level once its adjustment is written */
short adjusted = 0;            /* the deltas of the adjustment rows written */
byte arrived = 0;              /* units the admin brought in */
byte unentered = 0;            /* of those, units whose adjustment is not written (yet) */
bool counting = 0;             /* the adjustment is a count: a compare-and-swap */
byte expected_level = 0;       /* a count's "expected": the level the admin read */
byte counted = 0;              /* a count's "num": the units the admin counted */

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
bool due = 0;                  /* A's pay deadline has passed, by the order database's clock */

/* the election */
bool settling = 0;             /* a reconciler was elected: the requests had ended */
byte leader = 0;
byte leader_tokens = 0;
byte leader_losses = 0;
byte passes = 0;               /* the reconcilers' passes so far, whoever led them */

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

/* What an order whose outcome was unknown becomes once its flag is decided (the fill
   policy's `decided`, order_service/core/fills.py): deducted CONFIRMED, or a hold AWAITING payment (its clock starting then);
   returned CANCELLED, voided or refused FAILED. */
inline settled_status(o, d, s) {
    if
    :: d == DEDUCTED && HOLD(o) -> s = AWAITING
    :: d == DEDUCTED && !HOLD(o) -> s = CONFIRMED
    :: d == RETURNED -> s = CANCELLED
    :: else -> s = FAILED
    fi
}

/* The read of one part of a hold (in the step that reads): the level, the row's fence and the
   flag's decision, then the plan. `out` is the answer when nothing is to be written (answered
   at once), NONE when a write follows: a deduction, a refusal (lvl < qty, recorded) or a
   return. */
inline read_and_plan(w, f, a) {
    lvl = num; seen = row_fence; seen_seq = row_seq;
    /* an adjustment has a fresh id of its own, never decided: no decision to read */
    if :: a == ADJUST_CALL || !OWN_FLAG(a) -> dec = NONE :: else -> dec = decided[f] fi;
    if
    :: a == ADJUST_CALL ->
       printf("STEP worker %d reads for the adjustment: stock %d, row fence %d\n", w, lvl, seen)
    :: RETURNING(a) ->
       printf("STEP worker %d reads for the return of order %c: stock %d, row fence %d, decision %e\n",
              w, 'A' + f, lvl, seen, dec)
    :: else ->
       printf("STEP worker %d reads for order %c: stock %d, row fence %d, decision %e\n",
              w, 'A' + f, lvl, seen, dec)
    fi;
    /* then a pause past the session: the lock passes on and this holder does not know (in
       the step of the read: a pause later is this one with the others slower) */
    if
    :: lock_holder == w && session_losses < MAX_SESSION_LOSSES ->
       lock_holder = 0; session_losses++;
       printf("STEP worker %d is paused past its session: it loses the lock unaware\n", w)
    :: true -> skip
    fi;
    if
    :: RETURNING(a) ->
       /* plan's return: of a deducted flag, write it; returned before, the same answer */
       if
       :: dec == DEDUCTED -> out = NONE
#ifdef RETURN_NOT_ONCE
       :: dec == RETURNED -> out = NONE     /* planned whatever the flag's decision says */
#else
       :: dec == RETURNED -> out = RETURNED
#endif
       :: else -> out = VOIDED
       fi
    :: a == ADJUST_CALL ->
       /* batch._adjust: a count whose level is not the one it expected is stale (409 with
          the level now), nothing written; else one ledger line */
#ifdef CAS_IGNORES_EXPECTED
       out = NONE
#else
       if
       :: counting && expected_level != lvl -> out = STALE
       :: else -> out = NONE
       fi
#endif
    :: else ->
#ifdef FLAG_ONLY
       dec = NONE;             /* the pre-filter let it in: nothing else is asked */
#endif
       if
       :: dec == DEDUCTED -> out = DUPLICATE
       :: dec == VOIDED -> out = VOIDED
       :: dec == REFUSED -> out = INSUFFICIENT;
#ifdef WITNESS_LATE_ATTEMPT
          /* not a guard: a probe (tests/unit/test_model_check.py) that the story of a refusal that stays a refusal
             is reachable intact: A told FAILED, B's stock back, and an attempt of A still to
             run, which finds the refusal recorded and the stock there */
          assert(!(told[0] == FAILED && returns[1] == 1 && lvl >= qty[f]))
#endif
#ifdef WITNESS_LATE_ATTEMPT_RESTOCK
          /* the same probe with the stock back through a restock, B never returned */
          assert(!(told[0] == FAILED && returns[1] == 0 && adjusted > 0 && lvl >= qty[f]))
#endif
       :: dec == RETURNED -> out = CANCELLED
#ifdef REFUSAL_NOT_RECORDED
       :: dec == NONE && lvl < qty[f] -> out = INSUFFICIENT     /* nothing written */
#else
       :: dec == NONE && lvl < qty[f] -> out = NONE             /* the refusal, written */
#endif
       :: dec == NONE && lvl >= qty[f] -> out = NONE
       fi
    fi;
    if :: out != NONE -> answer_attempt(w, f, a) :: else -> skip fi
}

/* One write transaction (decide.py): the fenced level, the flow and decision rows of a
   deduction; the decision row of a refusal (no level, so no fence); the fenced level and the
   decision's compare-and-set deducted -> returned of a return. `out`: DEDUCTED, INSUFFICIENT,
   RETURNED, LOCK_LOST (refused by the fence), or NO_ANSWER: overtaken by an older holder, or
   the flag decided (or returned) since the read, so read again. */
inline write_rows(w, f, a, tok) {
    out = NONE;
    if
    :: DEDUCTION(a) && lvl < qty[f] -> skip          /* a refusal writes no level */
#ifdef ADJUST_UNFENCED
    :: a == ADJUST_CALL -> skip      /* the adjustment's level written last-writer-wins */
#endif
    :: else ->
#if defined(NO_FENCE)
       skip
#elif defined(FENCE_LE_ONLY)
       if
       :: row_fence > tok -> out = LOCK_LOST
       :: else -> skip
       fi
#else
       if
       :: seen > tok || (ROW_MOVED && row_fence > tok) -> out = LOCK_LOST
       :: ROW_MOVED && row_fence <= tok ->
          printf("STEP worker %d: the row was overtaken by an older holder, reads again\n", w);
          out = NO_ANSWER
       :: else -> skip
       fi
#endif
    fi;
    if
    :: RETURNING(a) ->
       /* mark_returned: UPDATE ... SET outcome = returned WHERE outcome = deducted */
       if
#ifndef RETURN_NOT_ONCE
       :: out == NONE && decided[f] != DEDUCTED ->
          printf("STEP worker %d: order %c's decision moved since the read, reads again\n",
                 w, 'A' + f);
          out = NO_ANSWER
#endif
       :: else -> skip
       fi
    :: a == ADJUST_CALL -> skip      /* its id is fresh: no key to meet */
#if !defined(NO_UNIQUE_ROW) && !defined(FLAG_ONLY)
    :: DEDUCTION(a) && !OWN_FLAG(a) -> skip      /* a flag of its own: no key to meet */
    :: DEDUCTION(a) && OWN_FLAG(a) ->
       if
       :: out == NONE && (decided[f] != NONE || flows[f] > 0) ->
          printf("STEP worker %d: the unique key finds order %c decided, reads again\n",
                 w, 'A' + f);
          out = NO_ANSWER
       :: else -> skip
       fi
#else
    :: else -> skip
#endif
    fi;
    if
    :: out == NONE && RETURNING(a) ->
       num = lvl + qty[f];
       row_seq++;
#ifndef NO_FENCE
       row_fence = tok;
#endif
       returns[f]++;
       decided[f] = RETURNED;
       out = RETURNED;
#ifdef WITNESS_EXPIRY_RESTOCK
       /* not a guard: a probe that an expired hold's return lands on a level a restock moved
          (each under the lock and the fence) */
       assert(!(a >= EXPIRY_CALL && adjusted > 0));
#endif
       printf("STEP worker %d returns order %c's stock with token %d: stock %d\n",
              w, 'A' + f, tok, num)
    :: out == NONE && a == ADJUST_CALL ->
       /* a count sets the level to what was counted, a restock adds its delta; the entry
          keeps the delta against the level read under the lock */
       if :: counting -> num = counted :: else -> num = lvl + 1 fi;
       adjusted = adjusted + num - lvl;
       row_seq++;
       unentered--;
#if !defined(NO_FENCE) && !defined(ADJUST_UNFENCED)
       row_fence = tok;
#endif
       assert(num >= 0);
       out = ADJUSTED;
       printf("STEP worker %d writes the adjustment with token %d: stock %d -> %d\n",
              w, tok, lvl, num)
    :: out == NONE && DEDUCTION(a) && lvl < qty[f] ->
       if :: decided[f] == NONE -> decided[f] = REFUSED :: else -> skip fi;
       out = INSUFFICIENT;
       printf("STEP worker %d records order %c refused (stock %d)\n", w, 'A' + f, lvl)
    :: out == NONE && DEDUCTION(a) && lvl >= qty[f] ->
       assert(returns[f] == 0);                   /* never deducted again once returned */
       num = lvl - qty[f];
       row_seq++;
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
           write_rows(w, f, a, tok);
           if
           :: out == NO_ANSWER -> read_and_plan(w, f, a)
           :: else -> answer_attempt(w, f, a)
           fi
       }
    od
}

/* The stock service's answer to one call; the flag is forgotten in Redis once decided. */
inline answer_attempt(w, f, a) {
    if
    :: a == ADJUST_CALL ->
       /* nobody waits on it (the admin's to try again): the count it was is forgotten, so
          what follows is one state whatever it was */
       counting = 0; expected_level = 0; counted = 0
    :: out != LOCK_LOST -> redis[f] = 0; answer[a] = out
    :: else -> answer[a] = out
    fi;
    if
    :: a == ADJUST_CALL -> printf("STEP worker %d answers the adjustment: %e\n", w, out)
    :: RETURNING(a) -> printf("STEP worker %d answers the return of order %c: %e\n", w, 'A' + f, out)
    :: else -> printf("STEP worker %d answers attempt %d of order %c: %e\n", w, a, 'A' + f, out)
    fi
}

/* A request whose flag is not live in Redis is answered from the stock database. */
inline answer_from_database(w, f, a) {
    if
    :: decided[f] == DEDUCTED -> out = DUPLICATE
    :: decided[f] == VOIDED -> out = VOIDED
    :: decided[f] == REFUSED -> out = INSUFFICIENT
    :: decided[f] == RETURNED -> out = CANCELLED
    :: else -> out = UNKNOWN_FLAG
    fi;
    answer[a] = out;
    printf("STEP worker %d: flag %c not in Redis, answers attempt %d from the database: %e\n",
           w, 'A' + f, a, out)
}

/* Before the lock. A deduction: the Redis pre-filter, a flag not live answered from the
   database. A return (StockDeduction.cancel): the flag's decision; none: voided (an empty
   rollback, recorded); deducted: to the lock; returned before: the same answer. An adjustment
   (StockDeduction.adjust): to the lock, like the requests it is combined with. `out` is the
   answer when the call ends here, NONE when it goes to the lock. */
inline before_lock(w, f, a) {
    out = NONE;
    if
    :: RETURNING(a) ->
       if
       :: decided[f] == DEDUCTED -> skip
       :: decided[f] == NONE -> decided[f] = VOIDED; out = VOIDED
       :: decided[f] == RETURNED -> out = RETURNED
       :: else -> out = VOIDED
       fi;
       if :: out != NONE -> answer_attempt(w, f, a) :: else -> skip fi
    :: a == ADJUST_CALL -> skip  /* no flag, no decision row: straight to the lock */
    :: DEDUCTION(a) && !redis[f] -> answer_from_database(w, f, a)
    :: else -> skip
    fi
}

/* The end of a hold: the lock released (unless lost), and the request forgotten, so idle
   workers are one state whatever they served. */
inline release(w) {
    if :: lock_holder == w -> lock_holder = 0 :: else -> skip fi;
    f = 0; a = 0; tok = 0; lvl = 0; seen = 0; seen_seq = 0; dec = NONE; out = NONE
}

/* A stock worker: a request (the pre-filter), the lock, its read-check-write; maybe one more
   request of its lane under the same hold (the second part of a split batch, same token). */
proctype worker(byte w) {
    byte f, a, tok, lvl, seen, seen_seq;
    mtype dec = NONE, out = NONE;
end_idle:
    do
    :: atomic {
           req?f, a ->
           before_lock(w, f, a);
           if
           :: out != NONE -> release(w); goto end_idle
           :: else ->
              working++;
              if
              :: a == ADJUST_CALL ->
                 printf("STEP worker %d: the adjustment goes to the lock\n", w)
              :: RETURNING(a) ->
                 printf("STEP worker %d: order %c's flag is deducted, its return goes to the lock\n", w, 'A' + f)
              :: else ->
                 printf("STEP worker %d: flag %c is live, attempt %d goes to the lock\n", w, 'A' + f, a)
              fi
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
              before_lock(w, f, a);
              if
              :: out != NONE -> release(w); working--; goto end_idle
              :: else ->
                 if
                 :: a == ADJUST_CALL ->
                    printf("STEP worker %d serves the adjustment as the second part of its batch (token %d)\n", w, tok)
                 :: RETURNING(a) ->
                    printf("STEP worker %d serves the return of order %c as the second part of its batch (token %d)\n", w, 'A' + f, tok)
                 :: else ->
                    printf("STEP worker %d serves attempt %d of order %c as the second part of its batch (token %d)\n", w, a, 'A' + f, tok)
                 fi;
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
       :: r == DEDUCTED -> settled_status(o, DEDUCTED, final)
       :: r == INSUFFICIENT || r == VOIDED || r == CANCELLED -> final = FAILED
       :: else ->
          /* duplicate, unknown flag, no answer: read the flows; none: ask the stock service
             to settle the flag (void), which may get no answer either: PENDING */
          if
          :: flows[o] > 0 -> settled_status(o, DEDUCTED, final)
          :: flows[o] == 0 ->
             void_flag(o, d);
             settled_status(o, d, final);
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
    /* Then the buyer of A, a hold, may pay it (transitions.pay: a compare-and-set from
       AWAITING before its deadline, by the order database's clock), maybe after a reconciler
       settled it, or cancel it; the buyer of B may cancel it once it is CONFIRMED
       (Cancellation.cancel): a compare-and-set to CANCELLING, the stock service's return (a
       call served by a stock worker), then CANCELLED (a compare-and-set from CANCELLING). A
       cancel that finds the order CANCELLING already (the expiry won the compare-and-set)
       asks the return too, as the code does: two returns of one flag may then be at work. */
    if
    :: atomic { HOLD(o) && status[o] == AWAITING && !due -> status[o] = PAID; told[o] = PAID;
                printf("STEP order %c is paid before its deadline: the buyer is told PAID\n", 'A' + o) }
    :: atomic { ((HOLDS_WORLD && HOLD(o) && (status[o] == AWAITING || status[o] == CANCELLING))
                 || (!HOLDS_WORLD && !HOLD(o) && status[o] == CONFIRMED)) ->
                if
                :: status[o] != CANCELLING -> status[o] = CANCELLING;
                   printf("STEP order %c is CANCELLING: its stock is asked back\n", 'A' + o)
                :: else ->
                   printf("STEP order %c's cancel finds it CANCELLING: asks its stock back too\n", 'A' + o)
                fi;
                if :: HOLD(o) -> a = RETURN_A_CALL :: else -> a = RETURN_B_CALL fi;
                req!o, a };
       atomic {
           answer[a] != NONE ->
           if
           :: answer[a] == RETURNED || answer[a] == VOIDED ->
              if :: status[o] == CANCELLING -> status[o] = CANCELLED :: else -> skip fi
           :: else -> skip     /* no return (the fence refused it): CANCELLING, asked again */
           fi;
           told[o] = status[o];
           printf("STEP order %c: the cancel is answered %e\n", 'A' + o, told[o]);
           a = 0
       }
    :: true
    fi
}

/* An elected reconciler's passes over the orders whose request has ended (reconciler.lead,
   reconcile.py): before each pass, still the leader (is_leader), or it stands down. In a pass,
   for a PENDING order, the flag's decision first (settled by it, whatever it is); undecided,
   before RECONCILE_VOID_AFTER the flag written again and the deduction made again under it
   (a call served by a stock worker like the buyer's, whose answer it waits for or gives up on,
   the call running on: a late attempt of the next pass; then the decision read again: still
   none, the order stays PENDING for the next pass), past it the flag voided. The passes are
   counted across leaders (`passes`): the bound is the order's age, not one leader's count. */
proctype reconciler(byte r) {
    byte tok = 0, o = 0, call = 0, p = 0;
    bool voiding = 0;
    mtype d = NONE, outcome = NONE;
    /* it settles orders older than a request's whole budget, "so no request of it is still
       running" (reconcile.py): the buyers' calls have ended and their attempts too (a void
       racing a late attempt is the buyer's own void, above); a reconciler elected after
       another was deposed may meet that one's deduction still at work */
end_elect:
    atomic {
        leader == 0 && placed[0] && placed[1] && (settling || (len(req) == 0 && working == 0)) ->
        leader = r; leader_tokens++; tok = leader_tokens; settling = 1;
        printf("STEP reconciler %d is elected, token %d\n", r, tok)
    };
    do
    :: atomic { leader == r && passes < NPASSES -> p = passes; passes++; o = 0;
                printf("STEP reconciler %d starts pass %d\n", r, p) };
    do
    :: o < NORDERS ->
       if
       :: atomic {
              status[o] == PENDING ->
              d = decided[o];
              if
#ifndef RECONCILER_NEW_FLAG
              :: d != NONE ->
                 printf("STEP reconciler %d finds order %c PENDING, its flag decided: %e\n",
                        r, 'A' + o, d)
#endif
#ifdef RECONCILER_NEW_FLAG
              :: true ->
                 printf("STEP reconciler %d finds order %c PENDING: places it again under a new flag, the old one unread\n",
                        r, 'A' + o);
#else
              :: d == NONE && p < VOID_PASS ->
#ifdef PASS_NEW_FLAG
                 if
                 :: p > 0 ->
                    printf("STEP reconciler %d finds order %c PENDING, undecided: places it again under a new flag\n",
                           r, 'A' + o)
                 :: else ->
                    printf("STEP reconciler %d finds order %c PENDING, undecided: writes its flag again and deducts it again\n",
                           r, 'A' + o)
                 fi;
#else
                 printf("STEP reconciler %d finds order %c PENDING, undecided: writes its flag again and deducts it again\n",
                        r, 'A' + o);
#endif
#endif
                 call = RECON_CALL + p * NORDERS + o;
                 redis[o] = 1;
                 req!o, call
#ifndef RECONCILER_NEW_FLAG
              :: d == NONE && p >= VOID_PASS ->
                 printf("STEP reconciler %d finds order %c PENDING, undecided past the bound: voids it\n",
                        r, 'A' + o);
                 voiding = 1
#endif
              fi;
              /* then a pause inside the pass: deposed, unable to tell */
              if
              :: leader == r && leader_losses < MAX_LEADER_LOSSES ->
                 leader = 0; leader_losses++;
                 printf("STEP reconciler %d is paused and deposed unaware\n", r)
              :: true -> skip
              fi
          };
          if
          :: voiding ->
             /* PUT /voidFlag, a call of its own after the read (GET /flags): a deduction
                that lands in between (an earlier pass's, given up on) is its answer */
             atomic {
                 void_flag(o, d);
                 printf("STEP reconciler %d's void of order %c is answered %e\n", r, 'A' + o, d);
#ifdef WITNESS_SECOND_PASS
                 /* not a guard: a probe that a pass past the bound meets the late deduction
                    of an earlier pass, and the order is settled by it, not failed */
                 assert(d != DEDUCTED);
#endif
                 voiding = 0
             }
          :: call != 0 ->
             /* the deduction's answer, or none in time (the call runs on), then the flag's
                decision read again (GET /flags) */
             if
             :: atomic {
                 answer[call] != NONE ->
                 printf("STEP reconciler %d: order %c's deduction again is answered %e\n",
                        r, 'A' + o, answer[call]);
#ifdef WITNESS_RECONCILER_DEDUCTS
                 /* not a guard: a probe that the story of an order deducted again by the reconcilers is reachable intact: an
                    order left PENDING, undecided, deducted by the reconciler */
                 assert(answer[call] != DEDUCTED);
#endif
                 d = decided[o];
                 answer[call] = NONE; call = 0
                }
             :: atomic {
                 p == 0 ->
                 printf("STEP reconciler %d gives up waiting on order %c's deduction again: it runs on\n",
                        r, 'A' + o);
                 d = decided[o];
                 call = 0
                }
             fi
          :: else -> skip
          fi;
          /* one transaction of the order database (transitions.move); still undecided (the
             lock lost, the flag lost again): nothing written, a later pass tries again */
          atomic {
              if :: d != NONE -> settled_status(o, d, outcome) :: else -> skip fi;
#ifndef NO_RECONCILER_FENCE
              if
              :: d != NONE && recon_fence > tok ->
                 printf("STEP reconciler %d's write is refused by the fence %d (its token %d)\n",
                        r, recon_fence, tok);
                 outcome = NONE          /* Superseded: nothing written, the pass ends */
              :: d != NONE && recon_fence <= tok -> recon_fence = tok
              :: else -> skip
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
              if :: d != NONE && outcome == NONE -> o = NORDERS :: else -> o++ fi;
              d = NONE; outcome = NONE
          }
       :: atomic { status[o] != PENDING -> o++ }
       fi
    :: else -> break
    od
    :: atomic { leader != r || passes >= NPASSES -> break }
    od;
    atomic { if :: leader == r -> leader = 0 :: else -> skip fi; tok = 0; o = 0; p = 0 }
}

/* The admin: one unit comes in and is entered as an adjustment (POST /stock/{goodsId}/
   adjustments), a request of the same batches as the orders' (the lock, the read, the fenced
   write): a restock, {"delta": 1}; or a count, {"expected": <the level it read>, "num": <the
   units it counted>}, the level read (GET /stock) and the shelf counted in the step that sends
   it (a deduction between the read and the send is one between the send and the lock). Its
   answer is not waited for: a stale count or a lost lock is the admin's to try again. */
proctype admin() {
    atomic {
        arrived++; unentered++;
#ifndef COUNT
        printf("STEP a unit is delivered: the admin restocks it (delta 1)\n");
#else
        counting = 1; expected_level = num; counted = num + unentered;
        printf("STEP the admin reads stock %d, counts %d: a count, expected %d, num %d\n",
               num, counted, expected_level, counted);
#endif
        req!0, ADJUST_CALL
    }
}

/* The elected reconciler's passes over holds (reconcile.py's other pages): an order AWAITING
   payment past its deadline is expired (Cancellation.expire: a compare-and-set AWAITING ->
   CANCELLING whose condition has the deadline passed by the order database's clock, then its
   stock returned like a cancel's, under the lock and the fence, then CANCELLED); an order
   CANCELLING (a return refused by the fence, or at work for its buyer's cancel) has its
   return asked again. A process of its own in the model, not the reconciler's: its writes are
   compare-and-sets of an order's status, which need no leader fence (NO_RECONCILER_FENCE shows
   it for the settle); so it can run in the restock world too, where it meets the restock.

   Time: `due` is the deadline passed by the order database's clock, which pay's and expiry's
   compare-and-sets each read in their own transaction. It turns when the expiry's write reads
   it: a deadline that passed earlier, with nothing reading the clock in between, is the same
   run. A pay after it would be refused (the code's pay then expires the hold itself: not
   modelled, the expiry here does it). Intact, the page (read before the write, by the
   reconciler's clock) and the write are one step: the write's compare-and-set reads the status
   again, so a page read earlier that found the hold AWAITING is this step or its skip. With
   -DEXPIRY_NO_STATUS_CAS the write trusts the page, so the two are apart. */
proctype expirer() {
    byte p = 0, call = 0;
    /* A pass that finds nothing in its pages changes nothing: the passes wait for work (an
       unpaid hold is expired, in the end; a refused return is asked again) */
    do
    :: p < EXPIRY_PASSES ->
end_page:
       if
#ifdef EXPIRY_NO_STATUS_CAS
       :: atomic { status[0] == AWAITING ->
                   printf("STEP the expiry reads order A AWAITING payment, its deadline past by its clock\n") };
          /* a plain write, its deadline the only condition: the status is the page's */
          atomic {
              due = 1; status[0] = CANCELLING;
              call = EXPIRY_CALL + p; req!0, call;
              printf("STEP the expiry moves order A to CANCELLING past its deadline: its stock is asked back\n")
          }
#else
       :: atomic {
              status[0] == AWAITING ->
              due = 1; status[0] = CANCELLING;
              call = EXPIRY_CALL + p; req!0, call;
              printf("STEP the expiry moves order A from AWAITING to CANCELLING past its deadline: its stock is asked back\n")
          }
#endif
       :: atomic { status[0] == CANCELLING ->
                   call = EXPIRY_CALL + p; req!0, call;
                   printf("STEP the expiry finds order A CANCELLING: asks its stock back again\n") }
       fi;
       if
       :: call != 0 ->
          atomic {
              answer[call] != NONE ->
              if
              :: (answer[call] == RETURNED || answer[call] == VOIDED) && status[0] == CANCELLING ->
                 status[0] = CANCELLED
              :: else -> skip     /* refused by the fence: CANCELLING, asked again */
              fi;
              printf("STEP the expiry's return of order A is answered %e: order A %e\n",
                     answer[call], status[0]);
              call = 0
          }
       :: else -> skip
       fi;
       p++
    :: else -> break
    od;
    p = 0
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
        for (o : 0 .. NCALLS - 1) { answer[o] = NONE }
        run buyer(0, 0, 2);
#if !defined(HOLDS) || !defined(RESTOCK)
        run buyer(1, 2, 1);
#endif
        run worker(1);
        run worker(2);
#ifdef HOLDS
        run expirer();
#endif
#ifdef RESTOCK
        run admin();
#endif
#if !defined(RESTOCK) && !defined(HOLDS)
        run reconciler(1);
        run reconciler(2);
        run redis_loss();
#endif
        skip
    };
    timeout ->
    /* every process has ended or waits for work: the end state */
    printf("STEP end: stock %d, flows A %d B %d, returns A %d B %d, adjusted %d, orders %e %e, told %e %e\n",
           num, flows[0], flows[1], returns[0], returns[1], adjusted, status[0], status[1],
           told[0], told[1]);
    assert(num >= 0);
#ifdef WITNESS_EXPIRY
    /* not a guard: a probe that a cancel and the expiry of one hold both asked its stock back,
       each answered RETURNED, and it came back once */
    assert(!(answer[RETURN_A_CALL] == RETURNED && returns[0] == 1
             && (answer[EXPIRY_CALL] == RETURNED || answer[EXPIRY_CALL + 1] == RETURNED)));
#endif
    /* no lost update (I1, the ledger balances): seeded + adjustments - flows + returns */
    assert(SEED + adjusted - num
           == (flows[0] - returns[0]) * qty[0] + (flows[1] - returns[1]) * qty[1]);
    /* and the level says what is there: what was seeded and came in, less what was sold, plus
       what came back, less a unit whose adjustment was not written (a stale count, a lost
       lock). The ledger can balance and this fail: a count applied against a level it did
       not expect writes a delta that balances and is not the one counted */
    assert(num + unentered == SEED + arrived
           - (flows[0] - returns[0]) * qty[0] - (flows[1] - returns[1]) * qty[1]);
    for (o : 0 .. NORDERS - 1) {
        assert(flows[o] <= 1);                                     /* one deduction per flag */
        /* returned at most once, only what was deducted, and never deducted again after */
        assert(returns[o] <= flows[o]);
        assert(decided[o] != RETURNED || (flows[o] == 1 && returns[o] == 1));
        assert(returns[o] == 0 || decided[o] == RETURNED);
        assert(told[o] != CONFIRMED || (flows[o] == 1 && returns[o] == 0
                                        && status[o] == CONFIRMED));
        /* told AWAITING (a hold): deducted, and since paid, cancelled or expired, or not */
        assert(told[o] != AWAITING || (flows[o] == 1 && status[o] != FAILED
                                       && status[o] != PENDING && status[o] != CONFIRMED));
        /* told PAID: it stays paid, its stock never comes back (pay against expiry) */
        assert(told[o] != PAID || (flows[o] == 1 && returns[o] == 0 && status[o] == PAID));
        /* told FAILED: no flow at the end, whatever stock came back (I9) */
        assert(told[o] != FAILED || (flows[o] == 0 && status[o] == FAILED));
#ifndef REFUSAL_NOT_RECORDED
        /* and a decision stops every attempt still to come (voided or refused); the variant
           that removes this rule is checked against its harm, the flow above */
        assert(told[o] != FAILED || decided[o] == VOIDED || decided[o] == REFUSED);
#endif
        /* told CANCELLED: the order is, and what was deducted came back */
        assert(told[o] != CANCELLED || (status[o] == CANCELLED && flows[o] == returns[o]));
        /* told CANCELLING (its return refused by the fence): the expiry may ask it again */
        assert(told[o] != CANCELLING || status[o] == CANCELLING || status[o] == CANCELLED);
        assert((status[o] != CONFIRMED && status[o] != AWAITING && status[o] != PAID
                && status[o] != CANCELLING)
               || (flows[o] == 1 && returns[o] == 0));
        assert(status[o] != FAILED || flows[o] == 0);
        assert(status[o] != CANCELLED || flows[o] == returns[o])
    }
}
