/* A model of backorders and cart reservations, checked exhaustively by spin: units owed
   beyond on-hand stock, within a cap, filled oldest first by the units that arrive; and a cart
   reservation ended exactly once, its units back once, whatever races it. A third small model,
   apart from model/protocol.pml (the flags, retries, reconcilers, returns and holds of a
   deduction) and model/locations.pml (two locations, transfers), so that its check takes
   seconds. Three worlds (the third, per location, -DLOCATED, is described where it starts):

   The backorders world (the default), stock_service/core/backorders.py and backordering.py:
   - one goods id, on hand 0, a backorder limit of LIMIT (3) units owed;
   - three buyers, A (1 unit), B (2 units, so that a line is filled in parts) and C (1 unit),
     arriving in any order. Each deduction is decided under the goods id's lock: what is on
     hand is first handed to the lines waiting (plan's serve_waiting before deduct), then the
     buyer takes what is left and backorders the rest when the units owed stay within the limit
     (else refused, nothing taken: try_backorder, Backorders.room); an order that owes units is
     a waiting line, BACKORDERED, whose place is the ledger seq of the commit that backordered it
     (the goods row's seq: the order of the commits);
   - two restocks of one unit each (admin adjustments, under the lock): in the same commit the
     unit goes to the waiting line of the oldest place (Backorders.serve), as much as it still
     wants (B's 2: in parts), and on hand only when no line waits;
   - the cancel of B once backordered or filled (plan's give_back): it reads what B has before
     it takes the lock (store.returning), then under the lock reads it again (decide.py's
     as_of_the_hold: a restock may have filled B between the two), B gives up its place and
     what it was filled comes back, to the oldest line waiting first, in the same commit;
   - one lock whose token grows; up to PAUSES holders (1; 2 with -DPAUSES=2) are paused past
     their session between their read and their commit and lose the lock unaware; another takes
     it with a newer token. Every hold's commit passes the code's gate, the compare-and-set on
     the goods row (decide.py's gate, StockWrite.set_level_fenced): only if its fence and ledger
     seq are still the ones read and the fence is not above the token (a newer holder wrote:
     refused; an older one since the read: read again and decide again), whatever its plan
     writes: a plan with a ledger line (a deduction taken or backordered, a restock, a cancel
     that gives units back) writes the level and moves the seq; one without (a refusal, a
     decision row alone; a cancel whose line gives back nothing, its line given up alone) moves
     the fence to its token and leaves the level and the seq as they are.
   - the commit writes what the code writes (backorder_store.write_backorders): a new line or
     decision as planned; a line read waiting handed units, `filled + n` (filled when all) and
     a line read waiting given up, its state alone (it keeps what it was handed), each a
     compare-and-set on the line still waiting (moved since: the commit rolls back, the hold
     reads again); the row's units owed moved by what the plan moved them (MOVE_OWED).
   Checked at every commit: on hand never below zero; the units owed never above the limit;
   nothing made or lost (units in = on hand + the units filled of the lines not cancelled); two
   waiting lines never share a place; the row's units owed never below zero, and what the lines
   owe (the commits' moves add up); and FAIRNESS: no line gets units, in whole or in part (a
   buyer's units taken from on hand count as its line's), while a line of an earlier place
   waits (any waiting line can take an arriving unit). At the end: the same, and no unit on
   hand while a line waits.

   The reservations world (-DRESERVATIONS), order_service/reservations/store.py: a reservation is
   a row of the order database whose id is its stock flag, deducted (held) when it was made:
   - one goods id, level 3; the reservation holds 2 (its flag deducted: level 1), state `held`,
     with a deadline: one bit, past expires_at by the order database's clock, turning at any
     moment;
   - a genOrder carrying the reservation id, and its retry (one idempotency key): the route's
     read, then one transaction, the compare-and-set held -> consumed before the deadline and the
     order (its id the reservation's): the held units are the order's, no second deduction. A
     consume that finds it consumed by its own key answers that order; released, expired, or
     held past its time: refused (409);
   - DELETE /reservations/{id} and its retry, sent while the first is at work: the route's read;
     held, the compare-and-set held -> released; released and its units not back, the return;
     consumed or expired: 409;
   - the elected reconciler, passes while there is work: a held reservation past its deadline
     moved held -> expired (the compare-and-set, after the deadline by the same clock), then its
     return; a released or expired one whose units are not back, its return asked again;
   - the return (PUT /returnStock/{flag}) under the goods id's lock and the fenced write, the
     flag's decision moved deducted -> returned by a compare-and-set (a repeat finds it returned
     and gives nothing); answered, the reservation's returned_at is set, once. Refused by the
     fence (a holder paused past its session): no answer, still owed.
   Checked at every commit: one terminal transition (a second write of the same state changes
   nothing); units back at most once; never both the order's and back; the reservation's units
   counted once (held, or back on the level). At the end: a genOrder answered the order finds it
   consumed, one refused finds no order (consumed or refused, never both), a DELETE answered
   released finds it released, one answered 409 finds it consumed or expired; past its deadline
   the reservation has ended, and released or expired its units are back.

   Guards, each removable at compile time (inventory/model_backorder_variants.py):
     -DFILL_NEWEST         arriving units to the newest waiting line first: a later order filled
                           first
     -DFILL_NOT_IN_COMMIT  arriving units put on hand, the lines served at the next deduction:
                           units on hand while a line waits (the hand-over keeps the order)
     -DNO_HANDOVER         a deduction takes what is on hand without handing it to the lines
                           first: NOT a counterexample alone, and expected not to be (arrivals
                           served in their commit leave nothing on hand while a line waits); with
                           FILL_NOT_IN_COMMIT, a newcomer takes the restocked unit: a later order
                           filled first
     -DCANCEL_READ_BEFORE_HOLD  the cancel gives back what B had when it read before the lock:
                           a unit handed to B between that read and the hold stays with the
                           cancelled B (units lost)
     -DGATE_ONLY_CHANGED_LEVELS  only a plan with a ledger line meets the fence (the code
                           before): a cancel whose line gives back nothing, paused past its
                           session, gives the line up after a newer holder handed it units (units
                           lost, the row's units owed below zero); a refusal commits unfenced too
     -DNO_FENCE            the backorders' commits last-writer-wins on their read: a holder paused
                           past its session writes over another (two lines at one place, units
                           made or lost, or the cap passed)
     -DNO_STATE_CAS        (reservations) each move from held made on the state the route or
                           the page read before, not in its commit: two ends (released, then
                           consumed: the units the order's and back)
     -DEXPIRY_NO_CAS       (reservations) the expiry alone on its page's read: released, then
                           expired
     -DRETURN_NO_CAS       (reservations) the return served whatever the flag's decision: the
                           DELETE and its retry (or the reconciler asking again) give the units
                           back twice
   Probes, not guards (tests/unit/test_model_backorders.py), each reached in the intact model:
   -DWITNESS_PARTIAL (a line filled in part by a restock), -DWITNESS_QUEUE (a restock meeting
   two waiting lines serves the older), -DWITNESS_CANCEL_FILLS (a cancelled line's units fill a
   waiting line in the cancel's commit), -DWITNESS_STALE_GIVE_UP (a cancel whose line gives back
   nothing, paused past its session, refused by the fence), -DWITNESS_STALE_REFUSAL (a refusal
   paused past its session refused by the fence); reservations: -DWITNESS_STALE (a return
   paused past its session refused by the fence after another gave the units back),
   -DWITNESS_LATE_CONSUME (a genOrder that read it held refused past its time, still held: the
   expiry's to end),
   -DWITNESS_OWN_KEY (the genOrder's retry, racing it, finds it consumed by its own key).

   Left out (said once): a second goods id, transfers received (model/locations.pml); named
   locations but in the locations world (-DLOCATED: no cancel there, the give-back to a
   location is the code's give_back, checked by tests/unit/test_location_backorder_properties.py); an order of two lines; a backordered deduction's flag, retries and
   reconcilers (model/protocol.pml); returns other than a cancel's; a reservation's returned
   units serving backorders (the two worlds are apart); a pending reservation (its deduction's
   outcome unknown: the protocol's flags); the order made of a reservation paid or cancelled
   afterwards (the protocol's holds); two reservations. */

#ifndef PAUSES
#define PAUSES 1                     /* holders paused past their session, at most */
#endif

mtype = { NONE, BACKORDERED, CONFIRMED, REFUSED, CANCELLED, HELD, CONSUMED, RELEASED,
          EXPIRED, DEDUCTED, RETURNED, DONE, SAME, CONFLICT, LOCK_LOST, AGAIN };

/* the goods row: its fence and its last ledger seq */
byte fence = 0;
byte seq = 0;

/* the lock */
byte holder = 0;
byte tokens = 0;
byte losses = 0;

#define ROW_MOVED (fence != seen || seq != seen_seq)

/* A holder paused past its session between its read and its commit: the lock passes on and
   this holder does not know. A step of its own, so that a counterexample has one only where
   it matters. */
inline pause(me) {
    atomic {
        holder = 0; losses++;
        step(me); printf(" is paused past its session: it loses the lock unaware\n")
    }
}

/* The fenced compare-and-set on the goods row: `out` LOCK_LOST (a newer holder wrote:
   refused), AGAIN (overtaken by an older holder: read again), or left NONE (write). */
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

/* the row written: the fence moves to the token, the seq one past the one read (the code's
   write passes the seq it planned) */
inline wrote_row() {
#ifndef NO_FENCE
    fence = tok;
#endif
    seq = seen_seq + 1
}

/* A hold whose plan writes no ledger line (a refusal; a cancel whose line gives back nothing)
   passes the same gate: the compare-and-set on the row's fence and seq as read, which moves the
   fence to its token and leaves the level and the seq as they are (decide.py's gate, for every
   goods id the hold read). GATE_ONLY_CHANGED_LEVELS, the code before: such a hold meets no
   fence and leaves the row untouched. */
inline gated_row() {
#if !defined(NO_FENCE) && !defined(GATE_ONLY_CHANGED_LEVELS)
    fence = tok
#else
    skip
#endif
}

inline take_lock(me) {
    holder == 0 -> holder = me; tokens++; tok = tokens
}

inline release(me) {
    if :: holder == me -> holder = 0 :: else -> skip fi
}


#if !defined(RESERVATIONS) && !defined(LOCATED)
/* ---------------------------------------------------------------- the backorders world */

#define NB 3                         /* the buyers' lines: A 0, B 1, C 2 */
#define WANT(o) (o == 1 -> 2 : 1)    /* A 1 unit, B 2, C 1 */
#ifndef LIMIT
#define LIMIT 3                      /* the goods id's backorderLimit: units owed, at most */
#endif
/* the clients: buyers 1-3 (A, B, C); restocks 4 and 5; the cancel of B 6 */
#define RESTOCK1 4
#define CANCEL 6

/* the stock database: on hand (the row's level) and the lines */
short on_hand = 0;
short owed = 0;                      /* the row's units owed, moved by each commit by what its
                                        plan moved them (backorder_store's MOVE_OWED) */
mtype st[NB];                        /* NONE (not decided yet), BACKORDERED (waiting),
                                        CONFIRMED (filled), REFUSED, CANCELLED */
byte fill[NB];                       /* units given to the line (on hand, then arrivals) */
byte place[NB];                      /* the ledger seq of the commit that decided it */
byte units_in = 0;                   /* the restocks' units, as their ledger rows say */

#define OWES(o) (st[o] == BACKORDERED -> WANT(o) - fill[o] : 0)
#define OWED (OWES(0) + OWES(1) + OWES(2))
#define HAS(o) ((st[o] == BACKORDERED || st[o] == CONFIRMED) -> fill[o] : 0)
#define WAITS(o) (st[o] == BACKORDERED)
#define ANY_WAITS (WAITS(0) || WAITS(1) || WAITS(2))
#define SHARE(a, b) (WAITS(a) && WAITS(b) && place[a] == place[b])
/* a line the holder read waiting and its plan moves, no longer waiting: the line's own
   compare-and-set (FILL_LINE, GIVE_UP: `state = 'waiting'`) matches nothing, the commit rolls
   back and the hold reads again */
#define MOVED_LINE(i) ((touched & waited & (1 << i)) && st[i] != BACKORDERED)
#define A_LINE_MOVED (MOVED_LINE(0) || MOVED_LINE(1) || MOVED_LINE(2))
/* on the holder's decision (its read, less and plus what it decided) */
#define P_OWES(o) (p_st[o] == BACKORDERED -> WANT(o) - p_fill[o] : 0)
#define P_OWED (P_OWES(0) + P_OWES(1) + P_OWES(2))
#ifdef FILL_NEWEST
#define FIRST(a, b) (p_place[a] > p_place[b])
#else
#define FIRST(a, b) (p_place[a] < p_place[b])
#endif

/* "STEP <the client's name>": the rest of the line is printed after it */
inline step(me) {
    printf("STEP ");
    if
    :: me < RESTOCK1 -> printf("order %c", 'A' + me - 1)
    :: me == RESTOCK1 || me == RESTOCK1 + 1 -> printf("restock %d", me - RESTOCK1 + 1)
    :: me == CANCEL -> printf("cancel of B")
    fi
}

/* the lines, as the database has them */
inline show_lines() {
    i = 0;
    do
    :: i < NB ->
       if
       :: st[i] == BACKORDERED ->
          printf(", %c waits %d/%d (place %d)", 'A' + i, fill[i], WANT(i), place[i])
       :: st[i] == CONFIRMED -> printf(", %c filled %d/%d (place %d)", 'A' + i, fill[i], WANT(i), place[i])
       :: st[i] == REFUSED -> printf(", %c refused", 'A' + i)
       :: st[i] == CANCELLED -> printf(", %c cancelled (handed %d)", 'A' + i, fill[i])
       :: else -> skip
       fi;
       i++
    :: else -> break
    od;
    i = 0;
    printf("\n")
}

/* The invariants, after every commit and at the end. */
inline balanced() {
    assert(on_hand >= 0);
    over_the_limit = (OWED > LIMIT);
    assert(!over_the_limit);
    made_or_lost = (units_in != on_hand + HAS(0) + HAS(1) + HAS(2));
    assert(!made_or_lost);
    assert(fill[0] <= WANT(0) && fill[1] <= WANT(1) && fill[2] <= WANT(2));
    two_lines_one_place = (SHARE(0, 1) || SHARE(0, 2) || SHARE(1, 2));
    assert(!two_lines_one_place);
    /* the row's units owed, as the commits moved them: never below zero, and the lines' */
    owed_below_zero = (owed < 0);
    assert(!owed_below_zero);
    owed_not_the_lines = (owed != OWED);
    assert(!owed_not_the_lines);
    over_the_limit = 0; made_or_lost = 0; two_lines_one_place = 0;
    owed_below_zero = 0; owed_not_the_lines = 0
}

/* Fairness, on the commit just made: no line given units (got) while a line of an earlier
   place still waits. */
inline fair() {
    i = 0;
    do
    :: i < NB ->
       j = 0;
       do
       :: j < NB ->
          later_filled_first = (got[j] > 0 && i != j && WAITS(i) && place[i] < place[j]);
          assert(!later_filled_first);
          j++
       :: else -> break
       od;
       i++
    :: else -> break
    od;
    i = 0; j = 0; later_filled_first = 0
}

/* The read under the lock: on hand, the lines, the row's fence and seq. */
inline read_row() {
    p_on = on_hand; seen = fence; seen_seq = seq; seen_owed = owed; touched = 0; waited = 0;
    lined = 0; answer = NONE;
    i = 0;
    do
    :: i < NB ->
       p_st[i] = st[i]; p_fill[i] = fill[i]; p_place[i] = place[i]; got[i] = 0;
       if :: st[i] == BACKORDERED -> waited = waited | (1 << i) :: else -> skip fi;
       i++
    :: else -> break
    od;
    i = 0
}

/* `left` units arriving: to the waiting line of the oldest place first (FILL_NEWEST: the
   newest), as much as it still wants, then the next; on hand only when no line waits. */
inline serve_waiting() {
    do
    :: left > 0 ->
       j = NB; i = 0;
       do
       :: i < NB ->
          if
          :: p_st[i] == BACKORDERED && (j == NB || FIRST(i, j)) -> j = i
          :: else -> skip
          fi;
          i++
       :: else -> break
       od;
       i = 0;
       if
       :: j == NB -> p_on = p_on + left; left = 0
       :: else ->
          give = WANT(j) - p_fill[j];
          if :: give > left -> give = left :: else -> skip fi;
          p_fill[j] = p_fill[j] + give; got[j] = got[j] + give; left = left - give;
          touched = touched | (1 << j);
          if :: p_fill[j] == WANT(j) -> p_st[j] = CONFIRMED :: else -> skip fi
       fi
    :: else -> break
    od;
    j = 0; give = 0
}

inline arrive() {
#ifdef FILL_NOT_IN_COMMIT
    p_on = p_on + left; left = 0   /* on hand: the lines served at the next deduction */
#else
    serve_waiting()
#endif
}

/* what the decision gives each line, and leaves on hand */
inline show_got() {
    i = 0;
    do
    :: i < NB -> if :: got[i] > 0 -> printf(", %c gets %d", 'A' + i, got[i]) :: else -> skip fi; i++
    :: else -> break
    od;
    i = 0;
    printf(", on hand %d\n", p_on)
}

/* The decision of each client on its read. */
inline decide(me) {
    step(me);
    if
    :: me < RESTOCK1 ->
       o = me - 1;
#ifndef NO_HANDOVER
       /* a deduction of a goods id with lines waiting: what is on hand is handed to them
          first (plan's serve_waiting before deduct) */
       left = p_on; p_on = 0; serve_waiting();
#endif
       /* then what on hand has, and the rest backordered within the limit */
       left = WANT(o);
       if :: p_on < left -> give = p_on :: else -> give = left fi;
       left = left - give;
       if
       :: left > 0 && P_OWED + left > LIMIT ->
          printf(" decides: %d more owed over the %d owed is beyond the limit %d, refused",
                 left, P_OWED, LIMIT);
          p_st[o] = REFUSED;
          /* nothing handed over: no ledger line, its refusal (a decision row) alone */
          if :: got[0] + got[1] + got[2] == 0 -> answer = REFUSED :: else -> lined = 1 fi
       :: else ->
          lined = 1;                  /* a line taken, or backordered: a ledger line each */
          p_on = p_on - give; p_fill[o] = give; got[o] = got[o] + give;
          p_place[o] = seen_seq + 1;
          if :: left > 0 -> p_st[o] = BACKORDERED :: else -> p_st[o] = CONFIRMED fi;
          printf(" decides: takes %d from on hand, backorders %d, place %d", give, left,
                 p_place[o])
       fi;
       touched = touched | (1 << o);
       left = 0; give = 0;
       show_got()
    :: me == RESTOCK1 || me == RESTOCK1 + 1 ->
       left = 1; lined = 1; arrive();
       printf(" decides: 1 unit arrives"); show_got()
    :: me == CANCEL ->
       /* B's units back (what it was filled; all of them, confirmed): it gives up its place,
          and what comes back serves the lines waiting (plan's give_back) */
#ifdef CANCEL_READ_BEFORE_HOLD
       left = early;                  /* what B had when the cancel read before the lock */
#else
       left = p_fill[1];              /* read again under the lock */
#endif
       /* the line keeps what it was handed (filled), its units back by the return's line */
       p_st[1] = CANCELLED; touched = touched | 2;
       /* units back: a ledger line (returned); none: the line given up alone, no ledger line */
       lined = (left > 0);
       printf(" decides: B (place %d) is cancelled and gives back %d", p_place[1], left);
       arrive();
       show_got()
    fi
}

/* One client: its lock hold, its read and decision, maybe a pause, its fenced commit. */
proctype client(byte me) {
    byte tok, seen, seen_seq, touched, waited, i, j, o, left, give, early;
    short p_on, seen_owed;
    mtype p_st[NB];
    byte p_fill[NB], p_place[NB], got[NB];
    mtype out = NONE, answer = NONE;
    bool lined;                      /* the plan writes a ledger line (a level, the seq) */
    bool over_the_limit, made_or_lost, two_lines_one_place, later_filled_first;
    bool owed_below_zero, owed_not_the_lines;
    /* the cancel, once B is backordered or confirmed, reads what B has before the lock */
    if
    :: me == CANCEL ->
end_read:
       atomic {
           (st[1] == BACKORDERED || st[1] == CONFIRMED); early = fill[1];
           step(me); printf(" reads what B has before the lock: %d\n", early)
       }
    :: else -> skip
    fi;
end_wait:
    atomic {
        take_lock(me);
        read_row();
        step(me); printf(" takes the lock, token %d: on hand %d, %d owed\n", tok, on_hand, OWED);
        decide(me)
    };
    do
    :: out != NONE -> break
    :: holder == me && losses < PAUSES -> pause(me)
    :: atomic {
           out == NONE ->
           /* every hold meets the fence, whatever its plan writes (decide.py's gate);
              GATE_ONLY_CHANGED_LEVELS, the code before: only a plan with a ledger line */
#ifdef GATE_ONLY_CHANGED_LEVELS
           if :: lined -> fenced(me) :: else -> skip fi;
#else
           fenced(me);
#endif
#ifdef WITNESS_STALE_GIVE_UP
           /* not a guard: a probe that a cancel whose line gives back nothing, paused past its
              session, is refused by the fence once a newer holder wrote, intact */
           assert(!(me == CANCEL && !lined && out == LOCK_LOST));
#endif
#ifdef WITNESS_STALE_REFUSAL
           /* not a guard: a probe that a refusal, paused past its session, is refused by the
              fence once a newer holder wrote, intact */
           assert(!(answer == REFUSED && out == LOCK_LOST));
#endif
           /* the lines' own compare-and-sets, in the commit: a line read waiting, moved since */
           if
           :: out == NONE && A_LINE_MOVED ->
              out = AGAIN;
              step(me); printf(": a line it read waiting has moved, the commit rolls back\n")
           :: else -> skip
           fi;
           if
           :: out == AGAIN -> out = NONE; read_row(); decide(me)
           :: out == NONE ->
              /* one commit, as the code writes it: the level and the seq of a plan with a
                 ledger line (a refusal, a give-up of nothing: neither), the lines, the units
                 owed moved by what the plan moved them, and the restock's ledger row */
              if :: lined -> on_hand = p_on :: else -> skip fi;
              i = 0;
              do
              :: i < NB ->
                 if
                 :: !(touched & (1 << i)) -> skip
                 :: (touched & waited & (1 << i)) && p_st[i] == CANCELLED ->
                    st[i] = CANCELLED         /* GIVE_UP: the state; filled left as it is */
                 :: (touched & waited & (1 << i)) && p_st[i] != CANCELLED ->
                    fill[i] = fill[i] + got[i];   /* FILL_LINE: filled + n, filled if all */
                    if :: fill[i] >= WANT(i) -> st[i] = CONFIRMED :: else -> skip fi
                 :: (touched & (1 << i)) && !(waited & (1 << i)) ->
                    /* a new line or decision; a filled line's flag returned (cancelled) */
                    st[i] = p_st[i]; fill[i] = p_fill[i]; place[i] = p_place[i]
                 fi;
                 i++
              :: else -> break
              od;
              i = 0;
              owed = owed + P_OWED - seen_owed;
              if :: me == RESTOCK1 || me == RESTOCK1 + 1 -> units_in++ :: else -> skip fi;
              if :: lined -> wrote_row() :: else -> gated_row() fi;
              if
              :: answer == REFUSED -> out = REFUSED;
                 step(me); printf(" is refused: its decision committed with token %d, fence %d",
                                  tok, fence)
              :: else -> out = DONE;
                 step(me); printf(" commits with token %d: on hand %d, %d owed (row: %d)", tok,
                                  on_hand, OWED, owed)
              fi;
              show_lines();
              balanced();
              fair();
#ifdef WITNESS_PARTIAL
              /* not a guard: a probe that a restock fills a line in part, intact */
              assert(!(me >= RESTOCK1 && me < CANCEL && WAITS(1) && got[1] > 0));
#endif
#ifdef WITNESS_QUEUE
              /* not a guard: a probe that a restock meets two waiting lines and serves the
                 older (so fairness is not held for want of a queue), intact */
              assert(!(me >= RESTOCK1 && me < CANCEL
                       && ((got[0] > 0 && (WAITS(1) || WAITS(2)))
                           || (got[1] > 0 && (WAITS(0) || WAITS(2)))
                           || (got[2] > 0 && (WAITS(0) || WAITS(1))))));
#endif
#ifdef WITNESS_CANCEL_FILLS
              /* not a guard: a probe that the units a cancelled line gives back fill a waiting
                 line in the cancel's commit, intact */
              assert(!(me == CANCEL && (got[0] > 0 || got[2] > 0)));
#endif
           :: else -> step(me); printf(" is answered %e\n", out)
           fi;
           /* the hold ends with its commit or its answer: the lock released, in the same step */
           if
           :: out != NONE ->
              release(me); tok = 0; seen = 0; seen_seq = 0; touched = 0; o = 0; p_on = 0;
              answer = NONE; waited = 0; seen_owed = 0; lined = 0;
              do
              :: i < NB -> p_st[i] = NONE; p_fill[i] = 0; p_place[i] = 0; got[i] = 0; i++
              :: else -> break
              od;
              i = 0
           :: else -> skip
           fi
       }
    od
}

init {
    byte i;
    bool over_the_limit, made_or_lost, two_lines_one_place, units_on_hand_while_a_line_waits;
    bool owed_below_zero, owed_not_the_lines;
    atomic {
        run client(1); run client(2); run client(3);     /* the buyers */
        run client(RESTOCK1); run client(RESTOCK1 + 1);   /* the restocks */
        run client(CANCEL);
        skip
    };
    timeout ->
    atomic {
        printf("STEP end: on hand %d, %d owed (row: %d), %d units in", on_hand, OWED, owed,
               units_in);
        show_lines();
        balanced();
        units_on_hand_while_a_line_waits = (on_hand > 0 && ANY_WAITS);
        assert(!units_on_hand_while_a_line_waits)
    }
}
#endif

#ifdef RESERVATIONS
/* ---------------------------------------------------------------- the reservations world */

#define INIT_LEVEL 3
#define RES 2                        /* the units the reservation holds */
/* the clients: the genOrder carrying the reservation id 1 and its retry 2 (one idempotency
   key); DELETE /reservations/{id} 3 and its retry 4; the elected reconciler 5 */
#define GEN1 1
#define DELETE1 3
#define RECONCILER 5

/* the order database: the reservation's state, whether its units are back, the order made of
   it (its id is the reservation's: one at most) */
mtype rstate = NONE;                 /* HELD, then CONSUMED, RELEASED or EXPIRED */
bool returned = 0;                   /* returned_at: the stock service took the units back */
bool ordered = 0;
byte ends = 0;                       /* terminal transitions committed */
bool deadline = 0;                   /* past expires_at, by the order database's clock */
/* the stock database: the goods row's level, the reservation's flag's decision */
short level = 0;
mtype decision = NONE;               /* DEDUCTED (its units held), then RETURNED */
byte back = 0;                       /* units the returns of the flag gave back */

/* what the clients were told */
bool told_consumed = 0;              /* a genOrder: the order */
bool told_refused = 0;               /* a genOrder: 409 (released, expired, or past its time) */
bool told_released = 0;              /* a DELETE: released */
bool told_conflict = 0;              /* a DELETE: 409 (consumed or expired) */

inline step(me) {
    printf("STEP ");
    if
    :: me < DELETE1 -> printf("genOrder (attempt %d)", me - GEN1 + 1)
    :: me >= DELETE1 && me < RECONCILER -> printf("DELETE (attempt %d)", me - DELETE1 + 1)
    :: me == RECONCILER -> printf("reconciler (pass %d)", pass)
    fi
}

/* The invariants, after every commit and at the end: the first one broken, by its name (the
   units back twice break the count of units too). */
inline balanced() {
    units_back_twice = (back > RES);
    the_order_s_and_back = (ordered && back > 0);
    two_ends = (ends > 1);
    /* the reservation's units counted once: held (its flag deducted) or back on the level */
    counted_once = (level + (decision == DEDUCTED -> RES : 0) == INIT_LEVEL);
    if
    :: units_back_twice -> assert(!units_back_twice)
    :: else ->
       if
       :: the_order_s_and_back -> assert(!the_order_s_and_back)
       :: else -> assert(!two_ends); assert(counted_once)
       fi
    fi;
    units_back_twice = 0; the_order_s_and_back = 0; two_ends = 0; counted_once = 0
}

/* The reservation from held to `to`: the compare-and-set of its state, in its own transaction
   of the order database (`due`: expire only past the deadline, consume only before it, by the
   order database's clock). With NO_STATE_CAS (or EXPIRY_NO_CAS, the expiry's) the write is made on
   the state the route or the page read before (`st0`, held), whatever the state is now. */
inline move_from_held(to, due) {
#if defined(NO_STATE_CAS)
    moved = (st0 == HELD && due);
#elif defined(EXPIRY_NO_CAS)
    moved = ((to == EXPIRED -> st0 : rstate) == HELD && due);
#else
    moved = (rstate == HELD && due);
#endif
    if
    :: moved ->
       /* a state written again as it is changes nothing; another one is a second end */
       if :: rstate != to -> ends++ :: else -> skip fi;
       step(me); printf(" moves it %e -> %e\n", rstate, to);
       rstate = to;
       balanced()
    :: else -> skip
    fi
}

/* PUT /returnStock/{flag}: the flag's units back, under the goods id's lock and the row's
   fence, and its decision moved deducted -> returned by a compare-and-set (a repeat finds it
   returned and gives nothing). Then, answered, the reservation's returned_at, set once. No
   answer (refused by the fence): still owed, the reconciler asks again. */
inline give_back(me) {
    atomic {
        take_lock(me); lv = level; dec = decision; seen = fence; seen_seq = seq;
        step(me); printf(" asks the return: takes the lock, token %d: level %d, flag %e\n",
                         tok, lv, dec)
    };
    out = NONE;
    do
    :: out != NONE -> break
    :: holder == me && losses < PAUSES -> pause(me)
    :: atomic {
           out == NONE ->
           fenced(me);
#ifdef WITNESS_STALE
           /* not a guard: a probe that a return paused past its session is refused by the
              fence once another return gave the units back, intact */
           assert(!(out == LOCK_LOST && back > 0));
#endif
#ifndef RETURN_NO_CAS
           /* the decision's compare-and-set deducted -> returned, in the commit */
           if :: out == NONE && decision != DEDUCTED -> out = SAME :: else -> skip fi;
#endif
           if
           :: out == AGAIN -> out = NONE; lv = level; dec = decision; seen = fence; seen_seq = seq
           :: out == NONE ->
              level = lv + RES; back = back + RES; decision = RETURNED;
              wrote_row();
              out = DONE;
              step(me); printf(" returns with token %d: level %d, back %d\n", tok, level, back);
              balanced()
           :: out == SAME -> step(me); printf(" finds the flag returned: nothing more\n")
           :: else -> skip
           fi;
           if :: out != NONE -> release(me); tok = 0; seen = 0; seen_seq = 0; lv = 0; dec = NONE
              :: else -> skip
           fi
       }
    od;
    atomic {
        if
        :: out == DONE || out == SAME ->
           if :: !returned && (rstate == RELEASED || rstate == EXPIRED) -> returned = 1 :: else -> skip fi
        :: else -> skip
        fi
    }
}

/* A genOrder carrying the reservation id (order_service/reservations/orders.py): the route's read, then the
   compare-and-set held -> consumed before the deadline and the order, one transaction. A
   repeat of its key (the other attempt) answers the order the key made. */
proctype gen_order(byte me) {
    byte pass;
    mtype st0;
    bool moved, units_back_twice, the_order_s_and_back, two_ends, counted_once;
    atomic {
        st0 = rstate;
        step(me); printf(" reads the reservation %e\n", st0);
        if
        :: ordered -> told_consumed = 1; step(me); printf(" finds the order of its key\n")
        :: !ordered && st0 != HELD -> told_refused = 1; step(me); printf(" is refused: %e\n", st0)
        :: else -> skip
        fi
    };
    if
    :: !told_consumed && st0 == HELD ->
       atomic {
           move_from_held(CONSUMED, !deadline);
           if
           :: moved && !ordered -> ordered = 1; told_consumed = 1;
              step(me); printf(" places the order: the held units are its\n"); balanced()
           :: moved && ordered -> told_consumed = 1   /* the order's key: the same order */
           :: !moved && rstate == CONSUMED -> told_consumed = 1;
              step(me); printf(" finds it consumed by its key: the same order\n")
           :: !moved && rstate != CONSUMED -> told_refused = 1;
              step(me); printf(" is refused: %e (past its time: %d)\n", rstate, deadline)
           fi;
#ifdef WITNESS_LATE_CONSUME
           /* not a guard: a probe that a genOrder racing the expiry, which read it held, is
              refused past its time while it is still held, intact */
           assert(!(!moved && rstate == HELD && deadline));
#endif
#ifdef WITNESS_OWN_KEY
           /* not a guard: a probe that the genOrder's retry, racing it, finds it consumed by
              its own key, intact */
           assert(!(!moved && rstate == CONSUMED));
#endif
           skip
       }
    :: else -> skip
    fi
}

/* DELETE /reservations/{id} (reservations.py's release): the route's read; held, the
   compare-and-set held -> released; released and its units not back, the return. */
proctype delete(byte me) {
    byte tok, seen, seen_seq, pass;
    short lv;
    mtype st0, dec, out;
    bool moved, units_back_twice, the_order_s_and_back, two_ends, counted_once;
    atomic { st0 = rstate; step(me); printf(" reads the reservation %e\n", st0) };
    if :: st0 == HELD -> atomic { move_from_held(RELEASED, true) } :: else -> skip fi;
    if
    :: rstate == RELEASED && !returned -> give_back(me)
    :: else -> skip
    fi;
    atomic {
        if
        :: rstate == RELEASED -> told_released = 1; step(me); printf(" is answered released\n")
        :: else -> told_conflict = 1; step(me); printf(" is answered 409: %e\n", rstate)
        fi
    }
}

/* The elected reconciler (order_service/settling/reservations.py): passes while there is work, each expiring a
   held reservation past its deadline (the compare-and-set, then the return) and asking the
   return again of a released or expired one whose units are not back. */
proctype reconciler(byte me) {
    byte tok, seen, seen_seq, pass;
    short lv;
    mtype st0, dec, out;
    bool moved, units_back_twice, the_order_s_and_back, two_ends, counted_once;
    do
    :: pass < 2 ->
end_pass:
       atomic {
           (deadline && rstate == HELD) || ((rstate == RELEASED || rstate == EXPIRED) && !returned)
           -> pass++; st0 = rstate;
           step(me); printf(" reads its pages: the reservation %e\n", st0)
       };
       if
       :: st0 == HELD ->
          atomic { move_from_held(EXPIRED, deadline) };
          if :: moved -> give_back(me) :: else -> skip fi
       :: st0 != HELD && !returned && (rstate == RELEASED || rstate == EXPIRED) -> give_back(me)
       :: else -> skip
       fi;
       moved = 0; st0 = NONE
    :: else -> break
    od
}

/* the deadline passes, at any moment */
proctype clock() {
    atomic { deadline = 1; printf("STEP the deadline passes\n") }
}

init {
    bool units_back_twice, the_order_s_and_back, two_ends, counted_once;
    atomic {
        /* POST /reservations: its flag deducted (held) under the lock, then the row held */
        level = INIT_LEVEL - RES; decision = DEDUCTED; rstate = HELD; seq = 1;
        printf("STEP POST /reservations: held, level %d\n", level);
        run gen_order(GEN1); run gen_order(GEN1 + 1);
        run delete(DELETE1); run delete(DELETE1 + 1);
        run reconciler(RECONCILER);
        run clock()
    };
    timeout ->
    atomic {
        printf("STEP end: reservation %e, units back %d, level %d, flag %e, order %d\n",
               rstate, returned, level, decision, ordered);
        balanced();
        /* an answer never contradicted by the end */
        assert(!told_consumed || (rstate == CONSUMED && ordered));
        assert(!told_refused || !ordered);            /* consumed or refused, never both */
        assert(!told_released || rstate == RELEASED);
        assert(!told_conflict || rstate == CONSUMED || rstate == EXPIRED);
        /* past its deadline, ended; released or expired, its units back (within the
           reconciler's passes, one holder paused) */
        assert(!deadline || rstate != HELD);
        assert(PAUSES > 1 || !(rstate == RELEASED || rstate == EXPIRED) || returned)
    }
}
#endif

#ifdef LOCATED
/* ------------------------------------------------------ the locations world (-DLOCATED) */
/* Backorder limits per location (stock_service/core/backorders.py: Backorders.bound and
   serve): one goods id, on hand 0 at two locations, N (priority first) and S; a backorder
   limit of LIMIT (3) for the goods id and LIMIT_N (1) for the lines naming N:
   - three buyers arriving in any order: A (1 unit, names N), B (2 units, names no location)
     and C (1 unit, names N). Under the lock: what is on hand is first handed to the lines
     waiting (serve_waiting before deduct); then the buyer takes what its location has (B:
     what N and S have, N first) and owes the rest when the goods id's units owed stay within
     LIMIT and, for a line naming N, the units owed by the lines naming N within LIMIT_N (else
     refused, nothing taken: try_backorder, Backorders.bound), a waiting line at the ledger
     seq of its commit;
   - two restocks of one unit each, one at S and one at N (admin adjustments at a location,
     under the lock): in the same commit the unit goes to the waiting line of the oldest place
     THAT MAY TAKE UNITS THERE (a line naming that location, or naming none), as much as it
     still wants, and on hand only when no such line waits;
   - one lock whose token grows; a holder may be paused past its session between its read and
     its commit (PAUSES), refused by the fence (the compare-and-set on the goods row).
   Checked at every commit: on hand never below zero at either location; the units owed never
   above LIMIT, those of the lines naming N never above LIMIT_N; nothing made or lost; a line
   naming N never holds a unit from S; the row's units owed are the lines'; and FAIRNESS PER
   LOCATION: no line gets units at a location while a line of an earlier place that may take
   units there waits. At the end: no unit on hand at a location while a line that may take it
   waits.
   Guards (inventory/model_backorder_variants.py):
     -DNO_LOCATION_LIMIT   the location's limit not checked, the goods id's alone: A and C both
                           owe at N (over_the_limit_at_n)
     -DSERVE_ANYWHERE      a line naming a location handed units at any location, oldest
                           first: A (or C) handed S's unit (a_unit_from_elsewhere; before B, a
                           line that may take it)
     -DSTRICT_FIFO         a unit goes to the oldest waiting line or stays on hand: S's unit
                           stays on hand behind A, which cannot take it, while B waits
     -DLOCATED_NEWEST      each location's units to its newest waiting line first
   Probe: -DWITNESS_SKIP (S's unit handed to B while an older A waits for N's, intact). */

#define NB 3                         /* the buyers' lines: A 0, B 1, C 2 */
#define WANT(o) (o == 1 -> 2 : 1)
#define LOC(o) (o == 1 -> 0 : 1)     /* the location its line names: 1 N, 2 S; 0 none */
#ifndef LIMIT
#define LIMIT 3
#endif
#ifndef LIMIT_N
#define LIMIT_N 1
#endif
#define RESTOCK1 4                   /* at S; RESTOCK1 + 1 at N */
#define WHERE(me) (me == RESTOCK1 -> 2 : 1)

short on_n = 0, on_s = 0;
short owed = 0;
mtype st[NB];
byte fn[NB], fs[NB];                 /* units given to the line from N, from S */
byte place[NB];
byte units_in = 0;

#define FILL(o) (fn[o] + fs[o])
#define OWES(o) (st[o] == BACKORDERED -> WANT(o) - FILL(o) : 0)
#define OWED (OWES(0) + OWES(1) + OWES(2))
#define OWES_N(o) (LOC(o) == 1 -> OWES(o) : 0)
#define OWED_N (OWES_N(0) + OWES_N(1) + OWES_N(2))
#define HAS(o) ((st[o] == BACKORDERED || st[o] == CONFIRMED) -> FILL(o) : 0)
#define WAITS(o) (st[o] == BACKORDERED)
#define MAY(o, l) (LOC(o) == 0 || LOC(o) == l)
#define WAITS_FOR(l) ((WAITS(0) && MAY(0, l)) || (WAITS(1) && MAY(1, l)) || (WAITS(2) && MAY(2, l)))
#define MOVED_LINE(i) ((touched & waited & (1 << i)) && st[i] != BACKORDERED)
#define A_LINE_MOVED (MOVED_LINE(0) || MOVED_LINE(1) || MOVED_LINE(2))
#define P_OWES(o) (p_st[o] == BACKORDERED -> WANT(o) - p_fn[o] - p_fs[o] : 0)
#define P_OWED (P_OWES(0) + P_OWES(1) + P_OWES(2))
#define P_OWES_N(o) (LOC(o) == 1 -> P_OWES(o) : 0)
#define P_OWED_N (P_OWES_N(0) + P_OWES_N(1) + P_OWES_N(2))
#ifdef SERVE_ANYWHERE
#define P_MAY(o, l) 1
#else
#define P_MAY(o, l) MAY(o, l)
#endif
#ifdef LOCATED_NEWEST
#define FIRST(a, b) (p_place[a] > p_place[b])
#else
#define FIRST(a, b) (p_place[a] < p_place[b])
#endif

inline step(me) {
    printf("STEP ");
    if
    :: me < RESTOCK1 -> printf("order %c", 'A' + me - 1)
    :: me == RESTOCK1 -> printf("restock at S")
    :: me == RESTOCK1 + 1 -> printf("restock at N")
    fi
}

inline show_lines() {
    i = 0;
    do
    :: i < NB ->
       if
       :: st[i] == BACKORDERED ->
          printf(", %c waits %d/%d at %d (place %d)", 'A' + i, FILL(i), WANT(i), LOC(i), place[i])
       :: st[i] == CONFIRMED -> printf(", %c filled %d/%d (place %d)", 'A' + i, FILL(i), WANT(i), place[i])
       :: st[i] == REFUSED -> printf(", %c refused", 'A' + i)
       :: else -> skip
       fi;
       i++
    :: else -> break
    od;
    i = 0;
    printf("\n")
}

inline balanced() {
    assert(on_n >= 0 && on_s >= 0);
    over_the_limit = (OWED > LIMIT);
    assert(!over_the_limit);
    over_the_limit_at_n = (OWED_N > LIMIT_N);
    assert(!over_the_limit_at_n);
    made_or_lost = (units_in != on_n + on_s + HAS(0) + HAS(1) + HAS(2));
    assert(!made_or_lost);
    a_unit_from_elsewhere = (fs[0] > 0 || fs[2] > 0);
    assert(!a_unit_from_elsewhere);
    owed_not_the_lines = (owed != OWED);
    assert(!owed_not_the_lines);
    over_the_limit = 0; over_the_limit_at_n = 0; made_or_lost = 0; a_unit_from_elsewhere = 0;
    owed_not_the_lines = 0
}

/* Fairness per location, on the commit just made: no line given units at a location (gn, gs)
   while a line of an earlier place that may take units there still waits. */
inline fair() {
    i = 0;
    do
    :: i < NB ->
       j = 0;
       do
       :: j < NB ->
          later_filled_first = (i != j && WAITS(i) && place[i] < place[j]
                                && ((gn[j] > 0 && MAY(i, 1)) || (gs[j] > 0 && MAY(i, 2))));
          assert(!later_filled_first);
          j++
       :: else -> break
       od;
       i++
    :: else -> break
    od;
    i = 0; j = 0; later_filled_first = 0
}

inline read_row() {
    p_n = on_n; p_s = on_s; seen = fence; seen_seq = seq; seen_owed = owed; touched = 0;
    waited = 0; answer = NONE;
    i = 0;
    do
    :: i < NB ->
       p_st[i] = st[i]; p_fn[i] = fn[i]; p_fs[i] = fs[i]; p_place[i] = place[i];
       gn[i] = 0; gs[i] = 0;
       if :: st[i] == BACKORDERED -> waited = waited | (1 << i) :: else -> skip fi;
       i++
    :: else -> break
    od;
    i = 0
}

/* what is on hand at location `l` to the waiting lines that may take units there, oldest
   first (STRICT_FIFO: to the oldest waiting line, or nowhere) */
inline serve_at(l) {
    do
    :: (l == 1 -> p_n : p_s) > 0 ->
       j = NB; i = 0;
       do
       :: i < NB ->
          if
#ifdef STRICT_FIFO
          :: p_st[i] == BACKORDERED && (j == NB || FIRST(i, j)) -> j = i
#else
          :: p_st[i] == BACKORDERED && P_MAY(i, l) && (j == NB || FIRST(i, j)) -> j = i
#endif
          :: else -> skip
          fi;
          i++
       :: else -> break
       od;
       i = 0;
       if
       :: j == NB -> break
       :: j < NB && !P_MAY(j, l) -> break   /* STRICT_FIFO: the oldest cannot take it */
       :: else ->
          give = WANT(j) - p_fn[j] - p_fs[j];
          if
          :: l == 1 -> if :: give > p_n -> give = p_n :: else -> skip fi;
             p_n = p_n - give; p_fn[j] = p_fn[j] + give; gn[j] = gn[j] + give
          :: else -> if :: give > p_s -> give = p_s :: else -> skip fi;
             p_s = p_s - give; p_fs[j] = p_fs[j] + give; gs[j] = gs[j] + give
          fi;
          touched = touched | (1 << j);
          if :: p_fn[j] + p_fs[j] == WANT(j) -> p_st[j] = CONFIRMED :: else -> skip fi
       fi
    :: else -> break
    od;
    j = 0; give = 0
}

inline show_got() {
    i = 0;
    do
    :: i < NB ->
       if :: gn[i] > 0 -> printf(", %c gets %d at N", 'A' + i, gn[i]) :: else -> skip fi;
       if :: gs[i] > 0 -> printf(", %c gets %d at S", 'A' + i, gs[i]) :: else -> skip fi;
       i++
    :: else -> break
    od;
    i = 0;
    printf(", on hand %d at N, %d at S\n", p_n, p_s)
}

inline decide(me) {
    step(me);
    if
    :: me < RESTOCK1 ->
       o = me - 1;
       serve_at(1); serve_at(2);      /* the hand-over before a deduction */
       /* what its location has (B: N's, then S's), the rest owed within both limits */
       left = WANT(o);
       take_n = 0; take_s = 0;
       if :: LOC(o) != 2 -> take_n = (p_n < left -> p_n : left) :: else -> skip fi;
       left = left - take_n;
       if :: LOC(o) != 1 -> take_s = (p_s < left -> p_s : left) :: else -> skip fi;
       left = left - take_s;
       if
       :: left > 0 && P_OWED + left > LIMIT ->
          printf(" decides: %d more owed over %d is beyond the goods id's limit %d, refused",
                 left, P_OWED, LIMIT);
          p_st[o] = REFUSED
#ifndef NO_LOCATION_LIMIT
       :: left > 0 && LOC(o) == 1 && P_OWED_N + left > LIMIT_N ->
          printf(" decides: %d more owed at N over %d is beyond N's limit %d, refused",
                 left, P_OWED_N, LIMIT_N);
          p_st[o] = REFUSED
#endif
       :: else ->
          p_n = p_n - take_n; p_s = p_s - take_s;
          p_fn[o] = take_n; p_fs[o] = take_s; gn[o] = gn[o] + take_n; gs[o] = gs[o] + take_s;
          p_place[o] = seen_seq + 1;
          if :: left > 0 -> p_st[o] = BACKORDERED :: else -> p_st[o] = CONFIRMED fi;
          printf(" decides: takes %d at N and %d at S, backorders %d, place %d", take_n,
                 take_s, left, p_place[o])
       fi;
       touched = touched | (1 << o);
       left = 0; take_n = 0; take_s = 0;
       show_got()
    :: else ->
       if :: WHERE(me) == 1 -> p_n++ :: else -> p_s++ fi;
       serve_at(WHERE(me));
       printf(" decides: 1 unit arrives"); show_got()
    fi
}

proctype client(byte me) {
    byte tok, seen, seen_seq, touched, waited, i, j, o, left, give, take_n, take_s;
    short p_n, p_s, seen_owed;
    mtype p_st[NB];
    byte p_fn[NB], p_fs[NB], p_place[NB], gn[NB], gs[NB];
    mtype out = NONE, answer = NONE;
    bool over_the_limit, over_the_limit_at_n, made_or_lost, a_unit_from_elsewhere;
    bool later_filled_first, owed_not_the_lines;
end_wait:
    atomic {
        take_lock(me);
        read_row();
        step(me); printf(" takes the lock, token %d: on hand %d at N, %d at S, %d owed\n",
                         tok, on_n, on_s, OWED);
        decide(me)
    };
    do
    :: out != NONE -> break
    :: holder == me && losses < PAUSES -> pause(me)
    :: atomic {
           out == NONE ->
           fenced(me);
           if
           :: out == NONE && A_LINE_MOVED ->
              out = AGAIN;
              step(me); printf(": a line it read waiting has moved, the commit rolls back\n")
           :: else -> skip
           fi;
           if
           :: out == AGAIN -> out = NONE; read_row(); decide(me)
           :: out == NONE ->
              on_n = p_n; on_s = p_s;
              i = 0;
              do
              :: i < NB ->
                 if
                 :: !(touched & (1 << i)) -> skip
                 :: else ->
                    st[i] = p_st[i]; fn[i] = p_fn[i]; fs[i] = p_fs[i]; place[i] = p_place[i]
                 fi;
                 i++
              :: else -> break
              od;
              i = 0;
              owed = owed + P_OWED - seen_owed;
              if :: me >= RESTOCK1 -> units_in++ :: else -> skip fi;
              wrote_row();
              out = DONE;
              step(me); printf(" commits with token %d: on hand %d at N, %d at S, %d owed (%d at N)",
                               tok, on_n, on_s, OWED, OWED_N);
              show_lines();
              balanced();
              fair();
#ifdef WITNESS_SKIP
              /* not a guard: S's unit handed to B while an older A waits for N's, intact */
              assert(!(me == RESTOCK1 && gs[1] > 0 && WAITS(0) && place[0] < place[1]));
#endif
           :: else -> step(me); printf(" is answered %e\n", out)
           fi;
           if
           :: out != NONE ->
              release(me); tok = 0; seen = 0; seen_seq = 0; touched = 0; o = 0; p_n = 0;
              p_s = 0; answer = NONE; waited = 0; seen_owed = 0;
              do
              :: i < NB -> p_st[i] = NONE; p_fn[i] = 0; p_fs[i] = 0; p_place[i] = 0;
                 gn[i] = 0; gs[i] = 0; i++
              :: else -> break
              od;
              i = 0
           :: else -> skip
           fi
       }
    od
}

init {
    byte i;
    bool over_the_limit, over_the_limit_at_n, made_or_lost, a_unit_from_elsewhere;
    bool owed_not_the_lines, units_on_hand_while_a_line_waits;
    atomic {
        run client(1); run client(2); run client(3);
        run client(RESTOCK1); run client(RESTOCK1 + 1);
        skip
    };
    timeout ->
    atomic {
        printf("STEP end: on hand %d at N, %d at S, %d owed (%d at N; row: %d), %d units in",
               on_n, on_s, OWED, OWED_N, owed, units_in);
        show_lines();
        balanced();
        units_on_hand_while_a_line_waits = ((on_n > 0 && WAITS_FOR(1)) || (on_s > 0 && WAITS_FOR(2)));
        assert(!units_on_hand_while_a_line_waits)
    }
}
#endif
