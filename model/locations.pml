/* A model of stock in several locations (locations, allocation, partial fill, transfers),
   checked exhaustively by spin: an order's allocation across two locations decided under the
   goods ids' lock against the levels read there and written under the row's fence, and a
   transfer moved leg by leg, each leg once. A world of its own, apart from model/protocol.pml
   (which has the flags, the retries of a deduction, the reconcilers, the returns and the
   holds, for one location), so that its check takes seconds.

   The world:
   - two goods ids, X and Y, each in two locations: N (priority 0, allocated from first) and S
     (priority 1). Levels: X N 1, S 2; Y N 0, S 1;
   - order A: X 1 + Y 1, all or nothing; order B: X 2, fill=partial. A stock worker serves
     each in a hold of its own, or both in one batch (combining), in either order: one lock
     hold, one read of every location's level, each order decided by the allocation rule
     (stock_service/core/allocation.py) on the levels the orders before it left, one commit of
     the levels and the allocation rows;
   - a transfer of 1 unit of X from S to N: POST /transfers, sent twice with one reference (a
     retry), takes the unit out of S (the out leg: the transfer row, in_transit, and a leg row
     (transfer, out)); S with less than a unit: 409, nothing moved. Then the receive, sent twice
     (a retry), puts it in N, and the cancel, sent twice too, racing them, puts it back in S
     (the in leg: a leg row (transfer, in), the state in_transit -> received or cancelled);
   - one lock (the claim on the goods ids of a request: every request names X, only A names Y)
     whose token grows; up to PAUSES holders (1; 2 with -DPAUSES=2, where the cancel is sent
     once: -DCANCEL_ONCE) are paused past their session after their read and lose the lock
     unaware, and another worker then takes it with a newer token;
   - X's stock row carries the fence and its last ledger entry (seq): every write of X's levels
     is the code's compare-and-set (WRITE_FENCED): only if the row's fence and seq are still
     the ones read and the fence is not above the token; then the fence is the token. A newer
     holder wrote: refused (the lock was lost); an older holder wrote since the read (its fence
     not above my token): read again and decide again. Y's row is written by A alone here, so
     its fence never refuses anything: it is left out;
   - a transfer's state is read under the lock with the levels (plan's step for a transfer,
     stock_service/core/transfers.py: a leg taken already is answered as it is, a leg the
     transfer can no longer take is refused, 409; a reference known answers its transfer), and
     in the commit the state moves by a compare-and-set from in_transit, the leg row meets its
     unique (transfer, leg) key, and the transfer row its unique reference.

   Checked at every commit: no level below zero; each location's level replays from its
   initial level, its allocations and its transfer legs; units in transit are the out legs
   less the in legs; each leg applied at most once, one transfer (one out leg) per reference.
   At the end too: nothing made or lost, counting the units in transit; an answer never
   contradicted (a receive answered received: the transfer is; a cancel answered cancelled:
   it is; the units answered to the orders are their allocation rows; A all or nothing). And
   at every decision, the rule stated, on the levels the decision was made on (which the fence
   makes the row's at the commit): never more than a location has; a line split only when no
   single location could fill it; a line that fits in one location filled; a partial order
   filled as far as the levels go; short only when a line cannot be filled even split; the
   whole order from one location when one could fill it, the best priority of those.

   Guards, each removable at compile time (inventory/model_location_variants.py):
     -DGREEDY_SPLIT   each line taken by priority until filled, no single location first:
                      a split that one location could have filled
     -DPER_LINE       each line from its own best location, neither the whole order from one
                      location nor the fewest locations: two locations where one fills it
     -DLEG_NOT_ONCE   a receive or a cancel served whatever the transfer's state: no state read
                      under the lock, no compare-and-set in the commit, no unique (transfer,
                      leg): an in leg applied twice
     -DOUT_NOT_ONCE   a POST served whatever its reference: no transfer read under the lock, no
                      unique reference: the units of one reference taken out twice
     -DNO_FENCE       the levels written last-writer-wins: a holder writes on its read over a
                      write that landed since (a lost update: units sold twice, or made)
     -DNO_LEG_CAS     the commit's state compare-and-set and the unique (transfer, leg) removed,
                      the state read under the lock kept: NOT a counterexample, and expected not
                      to be. The state moves only in a commit that writes X's row, so a holder
                      whose read of the state is stale finds the row moved: refused, or read
                      again. The read under the lock and the fence carry each leg once; the
                      compare-and-set and the key are the second guard (a write not fenced, a
                      path that writes the state alone).
   Probes, not guards (tests/unit/test_model_locations.py): -DWITNESS_SPLIT (a needed split is
   committed, intact), -DWITNESS_STALE_LEG (a holder that read the transfer in transit and lost
   the lock finds its write refused or overtaken once another leg was taken).

   Left out (said once): a third location, a second transfer, a third order; a client
   whose write the fence refused trying again (the protocol's model has the retries); the
   `default` location's level derived from the goods id's total (one level per location here:
   the total is their sum); held units; inactive locations (the rule's input leaves them out);
   a line that names its location; the flags, the decision rows, the retries of a deduction and
   the returns of a cancel (model/protocol.pml has them, for one location); a hold serving a
   second part under the same token (the protocol's FENCE_WITHOUT_SEQ story). */

#define NLOC 2                       /* N = 0 (priority 0), S = 1 (priority 1) */
#define X 0
#define Y 1
#define CELL(g, l) ((g) * NLOC + (l))
#define INIT_XN 1
#define INIT_XS 2
#define INIT_YN 0
#define INIT_YS 1

/* the orders' lines: A (o = 0) X 1 + Y 1, all or nothing; B (o = 1) X 2, partial */
#define NLINES(o) (o == 0 -> 2 : 1)
#define UNITS(o, k) (o == 0 -> 1 : 2)
#define PARTIAL(o) (o == 1)

/* the transfer: 1 unit of X from S to N */
#define T_FROM 1
#define T_TO 0
#define T_UNITS 1

/* the clients: order A 1, B 2; the POST 3 and its retry 4; the receive 5 and its retry 6;
   the cancel 7 and its retry 8 */
#define POST1 3
#define RECEIVE1 5
#define CANCEL 7
#define BATCH 9                      /* a batch of both orders: 9 A first, 10 B first */

mtype = { NONE, IN_TRANSIT, RECEIVED, CANCELLED, DONE, SAME, CONFLICT, REFUSED, LOCK_LOST,
          AGAIN };

/* the stock database */
short level[4];                      /* per (goods id, location) */
byte fence = 0;                      /* X's row: the fence, and its last ledger entry */
byte seq = 0;
short alloc[4];                      /* the allocation rows' units per (goods id, location) */
short legs[NLOC];                    /* the transfer legs' deltas per location of X */
short transit = 0;                   /* units in transit */
mtype tstate = NONE;                 /* the transfer row: none yet, in_transit, received,
                                        cancelled */
byte transfers = 0;                  /* transfer rows of the reference */
byte out_legs = 0;                   /* leg rows (transfer, out) */
byte in_legs = 0;                    /* leg rows (transfer, in): the receive's or the cancel's */

/* what the clients were told */
byte filled[2];                      /* units allocated to each order, as answered */
bool told_received = 0;
bool told_cancelled = 0;

/* the lock */
byte holder = 0;
byte tokens = 0;
byte losses = 0;

#ifndef PAUSES
#define PAUSES 1                     /* holders paused past their session, at most */
#endif

#define ROW_MOVED (fence != seen || seq != seen_seq)

/* The invariants, after every commit and at the end. */
inline balanced() {
    assert(in_legs <= 1);                        /* each leg applied at most once */
    assert(out_legs <= 1 && transfers <= 1);     /* one transfer, one out leg, per reference */
    assert(level[0] >= 0 && level[1] >= 0 && level[2] >= 0 && level[3] >= 0);
    /* each location's level replays from its initial level, its allocations and its legs
       (the cells: 0 X at N, 1 X at S, 2 Y at N, 3 Y at S) */
    assert(level[0] == INIT_XN - alloc[0] + legs[0]);
    assert(level[1] == INIT_XS - alloc[1] + legs[1]);
    assert(level[2] == INIT_YN - alloc[2] && level[3] == INIT_YS - alloc[3]);
    /* units in transit: the out legs less the in legs */
    assert(transit == (out_legs - in_legs) * T_UNITS)
}

/* The read under the lock: every level, X's row fence and seq, the transfer's state; then a
   pause past the session, in the same step (a pause later is this one with the others
   slower): the lock passes on and this holder does not know. */
inline read_row(me) {
    lv[0] = level[0]; lv[1] = level[1]; lv[2] = level[2]; lv[3] = level[3];
    seen = fence; seen_seq = seq; st = tstate
}

inline maybe_pause(me) {
    if
    :: holder == me && losses < PAUSES ->
       holder = 0; losses++;
       step(me); printf(" is paused past its session: it loses the lock unaware\n")
    :: true -> skip
    fi
}

/* The fenced compare-and-set on X's row: `out` LOCK_LOST (a newer holder wrote: refused), AGAIN
   (overtaken by an older holder: read again), or NONE (write). */
inline fenced(me) {
#ifdef NO_FENCE
    skip
#else
    if
    :: seen > tok || (ROW_MOVED && fence > tok) ->
       out = LOCK_LOST;
       step(me); printf("'s write is refused by the fence %d (its token %d)\n", fence, tok)
    :: ROW_MOVED && fence <= tok ->
       out = AGAIN;
       step(me); printf(": the row was overtaken by an older holder, reads again\n")
    :: else -> skip
    fi
#endif
}

inline wrote_row() {
#ifndef NO_FENCE
    fence = tok;
#endif
    seq++
}

inline release(me) {
    if :: holder == me -> holder = 0 :: else -> skip fi
}

/* "STEP <the client's name>": the rest of the line is printed after it */
inline step(me) {
    printf("STEP ");
    if
    :: me < POST1 -> printf("order %c", 'A' + me - 1)
    :: me >= POST1 && me < RECEIVE1 -> printf("POST /transfers (attempt %d)", me - POST1 + 1)
    :: me >= RECEIVE1 && me < CANCEL -> printf("receive (attempt %d)", me - RECEIVE1 + 1)
    :: me == CANCEL || me == CANCEL + 1 -> printf("cancel (attempt %d)", me - CANCEL + 1)
    :: else -> printf("the batch of order %c then %c", 'A' + me - BATCH, 'B' - me + BATCH)
    fi
}

/* Line k of an order is of goods id k (A: X and Y; B: X). A worker's decisions: member m of
   its batch (0, or 1 for the second order of a batch) takes TAKE(k, l) units of its line k
   from location l. */
#define HAVE(o, k, l) lv[CELL(k, l)]
#define FITS(o, k, l) (HAVE(o, k, l) >= UNITS(o, k))
#define FITS_ANY(o, k) (FITS(o, k, 0) || FITS(o, k, 1))
#define ALL_FIT(o, l) (FITS(o, 0, l) && (NLINES(o) == 1 || FITS(o, 1, l)))
#define SHORT_LINE(o, k) (HAVE(o, k, 0) + HAVE(o, k, 1) < UNITS(o, k))
#define TAKE(k, l) tk[m * 4 + CELL(k, l)]
#define USES(l) (TAKE(0, l) > 0 || TAKE(1, l) > 0)
/* a location of a line that fits one: every line that fits one fits there too */
#define COVERS(o, l) ((!FITS_ANY(o, 0) || FITS(o, 0, l)) \
                      && (NLINES(o) == 1 || !FITS_ANY(o, 1) || FITS(o, 1, l)))

inline clear_take() {
    TAKE(0, 0) = 0; TAKE(0, 1) = 0; TAKE(1, 0) = 0; TAKE(1, 1) = 0
}

/* A line split across the locations by priority, until it is filled or they run out. */
inline split_line(o, k) {
    left = UNITS(o, k);
    l = 0;
    do
    :: l < NLOC ->
       if
       :: HAVE(o, k, l) < left -> TAKE(k, l) = HAVE(o, k, l)
       :: else -> TAKE(k, l) = left
       fi;
       left = left - TAKE(k, l);
       l++
    :: else -> break
    od;
    if :: left > 0 -> short_of = 1 :: else -> skip fi;
    left = 0; l = 0
}

/* The allocation rule (allocation.allocate) on the levels the worker has: those it read, less
   what the orders before in its batch took. */
inline allocate(o) {
    clear_take(); short_of = 0;
    k = 0;
#ifdef GREEDY_SPLIT
    do
    :: k < NLINES(o) -> split_line(o, k); k++
    :: else -> break
    od;
#else
    /* the whole order from one location when one can fill it, the best priority first */
    if
#ifndef PER_LINE
    :: ALL_FIT(o, 0) -> whole = 0
    :: !ALL_FIT(o, 0) && ALL_FIT(o, 1) -> whole = 1
#endif
    :: else -> whole = NLOC
    fi;
    do
    :: k < NLINES(o) && whole < NLOC -> TAKE(k, whole) = UNITS(o, k); k++
    :: k < NLINES(o) && whole == NLOC && FITS_ANY(o, k) ->
       /* each line from one location, the fewest for the order (with two locations: one
          that covers every line that fits one, the best first; else each its best) */
#ifdef PER_LINE
       if :: FITS(o, k, 0) -> TAKE(k, 0) = UNITS(o, k) :: else -> TAKE(k, 1) = UNITS(o, k) fi;
#else
       if
       :: COVERS(o, 0) -> TAKE(k, 0) = UNITS(o, k)
       :: !COVERS(o, 0) && COVERS(o, 1) -> TAKE(k, 1) = UNITS(o, k)
       :: else ->
          if :: FITS(o, k, 0) -> TAKE(k, 0) = UNITS(o, k) :: else -> TAKE(k, 1) = UNITS(o, k) fi
       fi;
#endif
       k++
    :: k < NLINES(o) && whole == NLOC && !FITS_ANY(o, k) ->
       split_line(o, k);             /* no single location can fill it */
       k++
    :: else -> break
    od;
#endif
    /* all or nothing: a line short refuses the order, nothing allocated */
    if :: short_of && !PARTIAL(o) -> clear_take() :: else -> skip fi;
    k = 0; whole = 0
}

/* The rule, stated, held against the decision on the levels it was made on. */
inline rule_holds(o) {
    k = 0;
    do
    :: k < NLINES(o) ->
       more_than_there = (TAKE(k, 0) > HAVE(o, k, 0) || TAKE(k, 1) > HAVE(o, k, 1));
       assert(!more_than_there);
       /* a split only when no single location could fill the line */
       split_not_needed = (TAKE(k, 0) > 0 && TAKE(k, 1) > 0 && FITS_ANY(o, k));
       assert(!split_not_needed);
       /* a line that fits somewhere, filled (unless the order is refused) */
       fitting_line_not_filled = (FITS_ANY(o, k) && !(short_of && !PARTIAL(o))
                                  && TAKE(k, 0) + TAKE(k, 1) != UNITS(o, k));
       assert(!fitting_line_not_filled);
       /* partial: filled as far as the levels go */
       partial_not_filled = (PARTIAL(o) && TAKE(k, 0) + TAKE(k, 1) != UNITS(o, k)
                             && (TAKE(k, 0) != HAVE(o, k, 0) || TAKE(k, 1) != HAVE(o, k, 1)));
       assert(!partial_not_filled);
       k++
    :: else -> break
    od;
    k = 0;
    /* short (refused, or partial) only when a line cannot be filled even split */
    short_not_needed = (short_of && !SHORT_LINE(o, 0) && (NLINES(o) == 1 || !SHORT_LINE(o, 1)));
    assert(!short_not_needed);
    /* the whole order from one location when one can fill it, the best priority first */
    two_locations_not_needed = (USES(0) && USES(1) && (ALL_FIT(o, 0) || ALL_FIT(o, 1)));
    assert(!two_locations_not_needed);
    worse_location_for_the_order = (ALL_FIT(o, 0) && USES(1));
    assert(!worse_location_for_the_order);
    more_than_there = 0; split_not_needed = 0; fitting_line_not_filled = 0;
    partial_not_filled = 0; short_not_needed = 0; two_locations_not_needed = 0;
    worse_location_for_the_order = 0
}

/* One order decided on the running levels, which it then leaves less what it took. */
inline decide(o) {
    allocate(o);
    printf("STEP order %c, on X N %d S %d, Y N %d S %d: allocates X %d: N %d S %d",
           'A' + o, lv[CELL(X, 0)], lv[CELL(X, 1)], lv[CELL(Y, 0)], lv[CELL(Y, 1)],
           UNITS(o, 0), TAKE(0, 0), TAKE(0, 1));
    if
    :: NLINES(o) == 2 -> printf(", Y %d: N %d S %d\n", UNITS(o, 1), TAKE(1, 0), TAKE(1, 1))
    :: else -> printf("\n")
    fi;
    rule_holds(o);
    lv[0] = lv[0] - tk[m * 4]; lv[1] = lv[1] - tk[m * 4 + 1];
    lv[2] = lv[2] - tk[m * 4 + 2]; lv[3] = lv[3] - tk[m * 4 + 3]
}

/* The read under the lock, and the decision of each order of the batch in its order. */
inline read_and_decide(me) {
    read_row(me);
    m = 0; decide(first);
    if :: count == 2 -> m = 1; decide(1 - first); m = 0 :: else -> skip fi
}

/* A stock worker serving one order, or both in one batch (combining: one lock hold, one read,
   each decided on the levels the ones before it left, one commit), in either order. */
proctype worker(byte first; byte count) {
    byte me, tok, seen, seen_seq, k, l, m, whole, left;
    bool short_of;
    /* the rule's clauses, named so that a broken one reads as such in a counterexample */
    bool more_than_there, split_not_needed, fitting_line_not_filled, partial_not_filled;
    bool short_not_needed, two_locations_not_needed, worse_location_for_the_order;
    short lv[4];
    byte tk[8];
    mtype st, out = NONE;
    if :: count == 1 -> me = first + 1 :: else -> me = BATCH + first fi;
    atomic {
        holder == 0 -> holder = me; tokens++; tok = tokens;
        step(me); printf(" takes the lock, token %d: reads row fence %d\n", tok, fence);
        read_and_decide(me);
        maybe_pause(me)
    };
    do
    :: out != NONE -> break
    :: atomic {
           out == NONE ->
           k = tk[0] + tk[1] + tk[2] + tk[3] + tk[4] + tk[5] + tk[6] + tk[7];
           if
           :: k == 0 -> out = REFUSED        /* nothing allocated: a refusal writes no level */
           :: else -> fenced(me)
           fi;
           k = 0;
           if
           :: out == AGAIN -> out = NONE; read_and_decide(me)
           :: out == NONE ->
              /* the levels the batch leaves, and its allocation rows, in one commit */
              do
              :: k < 4 ->
                 if
                 :: tk[k] + tk[4 + k] > 0 ->
                    level[k] = lv[k]; alloc[k] = alloc[k] + tk[k] + tk[4 + k]
                 :: else -> skip
                 fi;
                 k++
              :: else -> break
              od;
              k = 0;
              wrote_row();
              filled[first] = tk[0] + tk[1] + tk[2] + tk[3];
              if :: count == 2 -> filled[1 - first] = tk[4] + tk[5] + tk[6] + tk[7] :: else -> skip fi;
              out = DONE;
              step(me);
              printf(" commits with token %d: X N %d S %d, Y N %d S %d\n", tok,
                     level[CELL(X, 0)], level[CELL(X, 1)], level[CELL(Y, 0)], level[CELL(Y, 1)]);
              balanced();
#ifdef WITNESS_SPLIT
              /* not a guard: a probe that a split (a needed one) is committed, intact */
              assert(!((tk[0] > 0 && tk[1] > 0) || (tk[4] > 0 && tk[5] > 0)))
#endif
           :: else -> skip
           fi
       }
    od;
    atomic { release(me); me = 0; tok = 0; seen = 0; seen_seq = 0; lv[0] = 0; lv[1] = 0;
             lv[2] = 0; lv[3] = 0; m = 0; do :: k < 8 -> tk[k] = 0; k++ :: else -> break od;
             k = 0; st = NONE; short_of = 0 }
}

/* POST /transfers with one reference (me: POST1 or its retry): the out leg. */
proctype post(byte me) {
    byte tok, seen, seen_seq;
    short lv[4];
    mtype st, out = NONE;
    atomic {
        holder == 0 -> holder = me; tokens++; tok = tokens;
        read_row(me);
        step(me); printf(" takes the lock, token %d: reads S %d, transfer %e\n",
                         tok, lv[CELL(X, T_FROM)], st);
        maybe_pause(me)
    };
    do
    :: out != NONE -> break
    :: atomic {
           out == NONE ->
#ifndef OUT_NOT_ONCE
           if :: st != NONE -> out = SAME :: else -> skip fi;   /* the reference is known */
#endif
           if
           :: out == NONE && lv[CELL(X, T_FROM)] < T_UNITS -> out = CONFLICT   /* 409 */
           :: out == NONE && lv[CELL(X, T_FROM)] >= T_UNITS -> fenced(me)
           :: else -> skip
           fi;
#ifndef OUT_NOT_ONCE
           if
           :: out == NONE && transfers > 0 ->
              step(me); printf(": the unique reference finds the transfer, reads again\n");
              out = AGAIN
           :: else -> skip
           fi;
#endif
           if
           :: out == AGAIN -> out = NONE; read_row(me)
           :: out == NONE ->
              level[CELL(X, T_FROM)] = lv[CELL(X, T_FROM)] - T_UNITS;
              legs[T_FROM] = legs[T_FROM] - T_UNITS;
              transit = transit + T_UNITS;
              transfers++; out_legs++;
              tstate = IN_TRANSIT;
              wrote_row();
              out = DONE;
              step(me); printf(" writes the out leg with token %d: S %d, in transit %d\n",
                               tok, level[CELL(X, T_FROM)], transit);
              balanced()
           :: else ->
              step(me); printf(" is answered %e\n", out)
           fi
       }
    od;
    atomic { release(me); tok = 0; seen = 0; seen_seq = 0; lv[0] = 0; lv[1] = 0; lv[2] = 0;
             lv[3] = 0; st = NONE }
}

/* POST /transfers/{id}/receive (me: RECEIVE1 or its retry) or /cancel (CANCEL): the in leg. */
proctype leg(byte me; bool receiving) {
    byte tok, seen, seen_seq, at;
    short lv[4];
    mtype st, out = NONE, wanted;
    if :: receiving -> at = T_TO; wanted = RECEIVED :: else -> at = T_FROM; wanted = CANCELLED fi;
end_wait:
    atomic {
        tstate != NONE && holder == 0 ->     /* called once the transfer exists */
        holder = me; tokens++; tok = tokens;
        read_row(me);
        step(me); printf(" takes the lock, token %d: reads transfer %e, %c %d\n",
                         tok, st, 'N' + at * ('S' - 'N'), lv[CELL(X, at)]);
        maybe_pause(me)
    };
    do
    :: out != NONE -> break
    :: atomic {
           out == NONE ->
#ifndef LEG_NOT_ONCE
           /* plan's step: a leg taken already, answered as it is; one it can no longer take,
              refused */
           if
           :: st == wanted -> out = SAME
           :: st != wanted && st != IN_TRANSIT -> out = CONFLICT
           :: else -> skip
           fi;
#endif
           if :: out == NONE -> fenced(me) :: else -> skip fi;
#ifdef WITNESS_STALE_LEG
           /* not a guard: a probe that a holder that read the transfer in transit, and lost the
              lock, finds its write refused or overtaken after another leg was taken */
           assert(!((out == LOCK_LOST || out == AGAIN) && in_legs > 0));
#endif
#if !defined(LEG_NOT_ONCE) && !defined(NO_LEG_CAS)
           /* the state's compare-and-set from in_transit, the unique (transfer, leg) */
           if
           :: out == NONE && (tstate != IN_TRANSIT || in_legs > 0) ->
              step(me); printf(": the transfer moved since the read, reads again\n");
              out = AGAIN
           :: else -> skip
           fi;
#endif
           if
           :: out == AGAIN -> out = NONE; read_row(me)
           :: out == NONE ->
              level[CELL(X, at)] = lv[CELL(X, at)] + T_UNITS;
              legs[at] = legs[at] + T_UNITS;
              transit = transit - T_UNITS;
              in_legs++;
              tstate = wanted;
              wrote_row();
              out = DONE;
              step(me); printf(" writes the in leg with token %d: %c %d, in transit %d\n",
                               tok, 'N' + at * ('S' - 'N'), level[CELL(X, at)], transit);
              balanced()
           :: else -> skip
           fi;
           if
           :: out == DONE || out == SAME ->
              if :: receiving -> told_received = 1 :: else -> told_cancelled = 1 fi
           :: else -> skip
           fi;
           if
           :: out != NONE && out != DONE -> step(me); printf(" is answered %e\n", out)
           :: else -> skip
           fi
       }
    od;
    atomic { release(me); tok = 0; seen = 0; seen_seq = 0; lv[0] = 0; lv[1] = 0; lv[2] = 0;
             lv[3] = 0; st = NONE }
}

init {
    atomic {
        level[CELL(X, 0)] = INIT_XN; level[CELL(X, 1)] = INIT_XS;
        level[CELL(Y, 0)] = INIT_YN; level[CELL(Y, 1)] = INIT_YS;
        if
        :: run worker(0, 1); run worker(1, 1)    /* each order in a hold of its own */
        :: run worker(0, 2)                      /* both in one batch, A first */
        :: run worker(1, 2)                      /* B first */
        fi;
        run post(POST1);
        run post(POST1 + 1);
        run leg(RECEIVE1, 1);
        run leg(RECEIVE1 + 1, 1);
        run leg(CANCEL, 0);
#ifndef CANCEL_ONCE
        run leg(CANCEL + 1, 0);
#endif
        skip
    };
    timeout ->
    printf("STEP end: X N %d S %d, Y N %d S %d, in transit %d, transfer %e, legs out %d in %d, filled A %d B %d\n",
           level[CELL(X, 0)], level[CELL(X, 1)], level[CELL(Y, 0)], level[CELL(Y, 1)], transit,
           tstate, out_legs, in_legs, filled[0], filled[1]);
    balanced();
    /* nothing made or lost, counting the units in transit */
    assert(level[0] + level[1] + transit + alloc[0] + alloc[1] == INIT_XN + INIT_XS);
    /* an answer never contradicted by the end */
    assert(!told_received || tstate == RECEIVED);
    assert(!told_cancelled || tstate == CANCELLED);
    assert(filled[0] + filled[1] == alloc[0] + alloc[1] + alloc[2] + alloc[3]);
    assert(tstate != IN_TRANSIT || transit == T_UNITS);
    assert(filled[0] == 0 || filled[0] == 2)     /* A all or nothing */
}
