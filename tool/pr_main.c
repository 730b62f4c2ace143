/* pr_main.c -- the Valgrind tool "prosper": the Prosper hardware tracker on every store.
 *
 * Glue only (cachegrind's layout): the tracker model is src/hwmodel, the OS component (SP-aware
 * inspection, redo log) is src/stack.  This file routes every store of the program to N model
 * instances (one per granularity x table configuration), runs the OS component for the main
 * thread's stack every --interval-instr guest instructions, measures what a checkpoint copies,
 * and checks each instance's shadow persistent stack against the live stack.
 *
 * Notes:
 *   - Stores are Ist_Store, Ist_StoreG, Ist_CAS (counted as a store, even if it fails),
 *     Ist_LLSC store-conditionals, dirty helpers that write memory (FXSAVE/XSAVE and such), and
 *     memory the kernel writes for a system call or a signal frame (post_mem_write).
 *   - Intervals are counted in guest instructions and checked at superblock entries, where the
 *     guest state is consistent; a checkpoint therefore lands at most one superblock late.
 *   - Tracked range: the main thread's stack [stack_max - stack_size + 1, stack_max].  Stores
 *     to it from other threads are tracked too (they are inter-thread stack writes).
 *   - The soundness oracle compares, after each checkpoint, every 8-byte granule of the active
 *     region [SP-128, top) that is DEFINED: written since it last lay below SP-128 at a
 *     checkpoint, or copied by the first (full) checkpoint.  Memory below SP is dead in Prosper's
 *     design, so bytes never written since are not part of the persistent state.
 *   - "Exact" bytes: 8-byte granules of the active region written in the interval whose value
 *     differs from the previous checkpoint's image: the least any tracker could copy.
 *   - "Dirtybit" bytes: 4 KiB pages of the stack written in the interval, from the page of
 *     SP-128 up, as the paper's Dirtybit baseline copies them.
 *   - Totals are printed; averages and ratios are computed by `prosper hw` (no floating point
 *     formatting inside the tool).
 */
#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_machine.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_clientstate.h"
#include "pub_tool_vki.h"

#include "prosper/hwmodel.h"
#include "prosper/stackckpt.h"
#include "prosper/prosper_hw.h"

/*------------------------------------------------------------*/
/*--- Options                                              ---*/
/*------------------------------------------------------------*/

#define MAX_CONFIGS 32
static const HChar *clo_gran = "8,16,32,64,128";
static const HChar *clo_tables = "16:24:8";
static Long clo_interval = 30000000;
static const HChar *clo_json = NULL;

static Bool pr_process_cmd_line_option(const HChar *arg)
{
	if VG_STR_CLO(arg, "--gran", clo_gran) {}
	else if VG_STR_CLO(arg, "--tables", clo_tables) {}
	else if VG_BINT_CLO(arg, "--interval-instr", clo_interval, 1000, 1000000000000LL) {}
	else if VG_STR_CLO(arg, "--json-out", clo_json) {}
	else return False;
	return True;
}

static void pr_print_usage(void)
{
	VG_(printf)("    --gran=LIST               granularities in bytes, 8..128 [8,16,32,64,128]\n"
		    "    --tables=T:H:L[,...]      lookup-table entries:HWM:LWM per configuration [16:24:8]\n"
		    "    --interval-instr=N        guest instructions per checkpoint interval [30000000]\n"
		    "    --json-out=FILE           write the totals as JSON to FILE\n");
}

static void pr_print_debug_usage(void) { VG_(printf)("    (none)\n"); }

/*------------------------------------------------------------*/
/*--- Types                                                ---*/
/*------------------------------------------------------------*/

struct config {
	struct prosper_hw hw;
	UInt log_gran;
	UChar *bitmap;          /* the bitmap the model writes (tool memory) */
	ULong bitmap_bytes;
	UChar *shadow;          /* the persistent stack image: shadow[i] = byte at base + i */
	UChar *log;             /* redo log, step 1 of the two-step commit */
	ULong log_cap;
	ULong bytes, records, runs, words_scanned, words_zeroed, mismatches, compared, max_log;
};

static struct config cfgs[MAX_CONFIGS];
static Int ncfg;

static Addr stk_base, stk_top;      /* tracked range [stk_base, stk_top] */
static ULong stk_len;
static Bool stk_ready;
static UChar *written;              /* 1 bit per 8 B granule: stored to in this interval */
static UChar *defined;              /* 1 bit per 8 B granule: part of the persistent state */
static UInt *store_count;           /* stores per 8 B granule in this interval (Fig 2) */
static UChar *page_dirty;           /* 1 byte per 4 KiB page: written in this interval */
static Addr touched_lo = ~0UL, touched_hi;

static ULong instrs, next_ckpt;
static ULong checkpoints, stack_stores, beyond_sp_stores, dirtybit_bytes, exact_bytes, exact_written_bytes;
static ULong first_ckpt_bytes, stores_seen;

/* The program's own tracker, driven by client requests; its bitmap is in client memory. */
static struct prosper_hw client_hw;

/*------------------------------------------------------------*/
/*--- Bitmap memory for the model                          ---*/
/*------------------------------------------------------------*/

static uint32_t mem_load32(void *ctx, uint64_t addr) { return *(volatile UInt *)(Addr)addr; }
static void mem_store32(void *ctx, uint64_t addr, uint32_t v) { *(volatile UInt *)(Addr)addr = v; }
static const struct prosper_hw_bitmap_ops mem_ops = { mem_load32, mem_store32, NULL };

static inline Bool bit_get(const UChar *bm, ULong i) { return (bm[i >> 3] >> (i & 7)) & 1; }
static inline void bit_set(UChar *bm, ULong i) { bm[i >> 3] |= (UChar)(1 << (i & 7)); }

/*------------------------------------------------------------*/
/*--- Simulation calls                                     ---*/
/*------------------------------------------------------------*/

static void stack_setup(void)
{
	ThreadId tid = 1;
	stk_top = VG_(thread_get_stack_max)(tid);
	SizeT size = VG_(thread_get_stack_size)(tid);
	stk_base = stk_top - size + 1;
	stk_len = size;
	ULong granules = stk_len / 8 + 1;
	written = VG_(calloc)("pr.written", granules / 8 + 8, 1);
	defined = VG_(calloc)("pr.defined", granules / 8 + 8, 1);
	store_count = VG_(calloc)("pr.counts", granules, sizeof(UInt));
	page_dirty = VG_(calloc)("pr.pages", stk_len / 4096 + 2, 1);
	for (Int i = 0; i < ncfg; i++) {
		struct config *c = &cfgs[i];
		c->bitmap_bytes = prosper_hw_bitmap_bytes(stk_len, c->log_gran);
		c->bitmap = VG_(calloc)("pr.bitmap", c->bitmap_bytes, 1);
		c->shadow = VG_(calloc)("pr.shadow", stk_len, 1);
		c->log_cap = 1 << 20;
		c->log = VG_(malloc)("pr.log", c->log_cap);
		prosper_hw_set_range(&c->hw, stk_base, stk_top);
		prosper_hw_set_dirtymap(&c->hw, (Addr)c->bitmap);
		prosper_hw_set_gran(&c->hw, c->log_gran);
	}
	stk_ready = True;
}

static VG_REGPARM(2) void pr_store(Addr a, UWord size)
{
	stores_seen++;
	if (client_hw.log_gran)
		prosper_hw_store(&client_hw, a, size);
	if (!stk_ready || size == 0 || a + size - 1 < stk_base || a > stk_top)
		return;
	for (Int i = 0; i < ncfg; i++)
		prosper_hw_store(&cfgs[i].hw, a, size);
	Addr lo = a < stk_base ? stk_base : a;
	Addr hi = a + size - 1 > stk_top ? stk_top : a + size - 1;
	stack_stores++;
	store_count[(lo - stk_base) >> 3]++;
	for (ULong g = (lo - stk_base) >> 3; g <= (hi - stk_base) >> 3; g++) {
		bit_set(written, g);
		bit_set(defined, g);
	}
	for (ULong p = (lo - stk_base) >> 12; p <= (hi - stk_base) >> 12; p++)
		page_dirty[p] = 1;
	if (lo < touched_lo)
		touched_lo = lo;
	if (hi > touched_hi)
		touched_hi = hi;
}

static void pr_post_mem_write(CorePart part, ThreadId tid, Addr a, SizeT size)
{
	pr_store(a, size);
}

/* The emit callback of the inspection: append the run's live bytes to the redo log. */
struct emit_ctx {
	struct config *c;
	ULong bytes;
};

static void emit_run(void *vctx, uint64_t off, uint64_t len)
{
	struct emit_ctx *e = vctx;
	struct config *c = e->c;
	while (prosper_stacklog_append(c->log, c->log_cap, off, (const void *)(stk_base + off), (UInt)len) != 0) {
		c->log_cap *= 2;
		c->log = VG_(realloc)("pr.log", c->log, c->log_cap);
	}
	e->bytes += len;
	c->runs++;
}

static void emit_nothing(void *vctx, uint64_t off, uint64_t len) {}

static void ensure_log(struct config *c, ULong need)
{
	if (c->log_cap < need) {
		c->log_cap = need;
		c->log = VG_(realloc)("pr.log", c->log, c->log_cap);
	}
}

/* checkpoint -- the OS component at an interval boundary, for every configuration. */
static void checkpoint(void)
{
	if (!stk_ready)
		return;
	Addr sp = VG_(get_SP)(1);
	Addr active_lo = sp - 128 < stk_base ? stk_base : sp - 128;
	if (active_lo > stk_top + 1)
		active_lo = stk_top + 1;
	ULong lo_off = active_lo - stk_base, g_lo = lo_off >> 3, g_end = (stk_len + 7) >> 3;
	Bool first = checkpoints == 0;

	/* Exact minimum: written granules whose value differs from the last image (config 0's). */
	ULong exact = 0, exact_w = 0;
	for (ULong g = g_lo; g < g_end; g++) {
		if (!first && !bit_get(written, g))
			continue;
		exact_w += 8;
		ULong from = g * 8 < lo_off ? lo_off : g * 8, to = g * 8 + 8 > stk_len ? stk_len : g * 8 + 8;
		if (first || VG_(memcmp)(cfgs[0].shadow + from, (const void *)(stk_base + from), to - from) != 0)
			exact += 8;
	}

	for (Int i = 0; i < ncfg; i++) {
		struct config *c = &cfgs[i];
		/* 1. tracking off, flush, quiescence */
		prosper_hw_set_gran(&c->hw, 0);
		prosper_hw_flush(&c->hw);
		tl_assert(prosper_hw_sync(&c->hw));
		/* 2. inspection + step 1 (redo records) */
		struct prosper_stack_inspect_stats st;
		VG_(memset)(&st, 0, sizeof st);
		struct emit_ctx e = { c, 0 };
		prosper_stacklog_init(c->log, c->log_cap, checkpoints + 1);
		if (first) {
			/* the first checkpoint copies the whole active region */
			prosper_stack_inspect((uint64_t *)c->bitmap, c->bitmap_bytes / 8, stk_base, stk_len, c->log_gran,
					      active_lo, c->hw.track_min, emit_nothing, NULL, &st);
			ensure_log(c, stk_len - lo_off + 4096);
			prosper_stacklog_init(c->log, c->log_cap, checkpoints + 1);
			emit_run(&e, lo_off, stk_len - lo_off);
		} else {
			prosper_stack_inspect((uint64_t *)c->bitmap, c->bitmap_bytes / 8, stk_base, stk_len, c->log_gran,
					      active_lo, c->hw.track_min, emit_run, &e, &st);
		}
		prosper_stacklog_seal(c->log);
		uint64_t epoch = 0;
		tl_assert(prosper_stacklog_check(c->log, c->log_cap, &epoch) == 0 && epoch == checkpoints + 1);
		/* 3. step 2: apply to the persistent image */
		tl_assert(prosper_stacklog_apply(c->log, c->shadow, stk_len) == 0);
		if (first)
			first_ckpt_bytes = e.bytes;
		else
			c->bytes += e.bytes;
		c->records += prosper_stacklog_records(c->log);
		if (prosper_stacklog_bytes(c->log) > c->max_log)
			c->max_log = prosper_stacklog_bytes(c->log);
		c->words_scanned += st.words_scanned;
		c->words_zeroed += st.words_zeroed;
		prosper_hw_set_gran(&c->hw, c->log_gran);
	}

	/* Dead granules (below SP-128) stop being part of the persistent state. */
	if (first) {
		for (ULong g = g_lo; g < g_end; g++)
			bit_set(defined, g);
	}
	VG_(memset)(defined, 0, g_lo >> 3);
	for (ULong g = g_lo & ~7ULL; g < g_lo; g++)
		defined[g >> 3] &= (UChar)~(1 << (g & 7));

	/* Soundness oracle: every defined byte of the active region equals the live stack. */
	for (Int i = 0; i < ncfg; i++) {
		struct config *c = &cfgs[i];
		for (ULong g = g_lo; g < g_end; g++) {
			if (!bit_get(defined, g))
				continue;
			ULong from = g * 8 < lo_off ? lo_off : g * 8, to = g * 8 + 8 > stk_len ? stk_len : g * 8 + 8;
			const UChar *live = (const UChar *)(stk_base + from);
			for (ULong k = 0; k < to - from; k++)
				c->mismatches += c->shadow[from + k] != live[k];
			c->compared += to - from;
		}
	}

	/* Dirtybit and Fig 2 counts; reset the per-interval state. */
	ULong pages = 0;
	for (ULong p = (lo_off >> 12); p <= (stk_len - 1) >> 12; p++)
		pages += first || page_dirty[p];
	if (!first) {
		dirtybit_bytes += pages * 4096;
		exact_bytes += exact;
		exact_written_bytes += exact_w;
	}
	if (touched_lo <= touched_hi) {
		for (ULong g = (touched_lo - stk_base) >> 3; g <= (touched_hi - stk_base) >> 3; g++) {
			if (stk_base + g * 8 < sp)
				beyond_sp_stores += store_count[g];
			store_count[g] = 0;
		}
		for (ULong g = (touched_lo - stk_base) >> 6; g <= (touched_hi - stk_base) >> 6; g++)
			written[g] = 0;
		for (ULong p = (touched_lo - stk_base) >> 12; p <= (touched_hi - stk_base) >> 12; p++)
			page_dirty[p] = 0;
	}
	touched_lo = ~0UL;
	touched_hi = 0;
	checkpoints++;
}

static VG_REGPARM(1) void pr_sb_entry(UWord n)
{
	if (!stk_ready)
		stack_setup();
	instrs += n;
	if (instrs >= next_ckpt) {
		checkpoint();
		next_ckpt = instrs + (ULong)clo_interval;
	}
}

/*------------------------------------------------------------*/
/*--- Instrumentation                                      ---*/
/*------------------------------------------------------------*/

static void add_store(IRSB *sb, IRExpr *addr, Int size, IRExpr *guard)
{
	IRDirty *di = unsafeIRDirty_0_N(2, "pr_store", VG_(fnptr_to_fnentry)(&pr_store),
					mkIRExprVec_2(addr, mkIRExpr_HWord((HWord)size)));
	if (guard)
		di->guard = guard;
	addStmtToIRSB(sb, IRStmt_Dirty(di));
}

static IRSB *pr_instrument(VgCallbackClosure *closure, IRSB *in, const VexGuestLayout *layout,
			   const VexGuestExtents *vge, const VexArchInfo *archinfo_host, IRType gWordTy,
			   IRType hWordTy)
{
	IRSB *out = deepCopyIRSBExceptStmts(in);
	Int i = 0, ninstr = 0;
	for (Int k = 0; k < in->stmts_used; k++)
		ninstr += in->stmts[k] && in->stmts[k]->tag == Ist_IMark;
	while (i < in->stmts_used && in->stmts[i]->tag != Ist_IMark)
		addStmtToIRSB(out, in->stmts[i++]);
	/* Interval accounting at entry; it reads SP, so say so (the guest state must be current). */
	IRDirty *entry = unsafeIRDirty_0_N(1, "pr_sb_entry", VG_(fnptr_to_fnentry)(&pr_sb_entry),
					   mkIRExprVec_1(mkIRExpr_HWord((HWord)ninstr)));
	entry->nFxState = 1;
	entry->fxState[0].fx = Ifx_Read;
	entry->fxState[0].offset = layout->offset_SP;
	entry->fxState[0].size = layout->sizeof_SP;
	entry->fxState[0].nRepeats = 0;
	entry->fxState[0].repeatLen = 0;
	addStmtToIRSB(out, IRStmt_Dirty(entry));

	for (; i < in->stmts_used; i++) {
		IRStmt *st = in->stmts[i];
		if (!st)
			continue;
		switch (st->tag) {
		case Ist_Store:
			add_store(out, st->Ist.Store.addr, sizeofIRType(typeOfIRExpr(in->tyenv, st->Ist.Store.data)), NULL);
			break;
		case Ist_StoreG: {
			IRStoreG *sg = st->Ist.StoreG.details;
			add_store(out, sg->addr, sizeofIRType(typeOfIRExpr(in->tyenv, sg->data)), sg->guard);
			break;
		}
		case Ist_CAS: {
			IRCAS *cas = st->Ist.CAS.details;
			Int sz = sizeofIRType(typeOfIRExpr(in->tyenv, cas->dataLo)) * (cas->dataHi ? 2 : 1);
			add_store(out, cas->addr, sz, NULL);
			break;
		}
		case Ist_LLSC:
			if (st->Ist.LLSC.storedata)
				add_store(out, st->Ist.LLSC.addr, sizeofIRType(typeOfIRExpr(in->tyenv, st->Ist.LLSC.storedata)), NULL);
			break;
		case Ist_Dirty: {
			IRDirty *d = st->Ist.Dirty.details;
			if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
				add_store(out, d->mAddr, d->mSize, NULL);
			break;
		}
		default:
			break;
		}
		addStmtToIRSB(out, st);
	}
	return out;
}

/*------------------------------------------------------------*/
/*--- Client requests                                      ---*/
/*------------------------------------------------------------*/

static Bool pr_handle_client_request(ThreadId tid, UWord *arg, UWord *ret)
{
	if (!VG_IS_TOOL_USERREQ('P', 'R', arg[0]))
		return False;
	*ret = 0;
	switch (arg[0]) {
	case PROSPER_HW_TRACK_START: client_hw.track_start = arg[1]; break;
	case PROSPER_HW_TRACK_END: client_hw.track_end = arg[1]; break;
	case PROSPER_HW_DIRTYMAP_ADDR: prosper_hw_set_dirtymap(&client_hw, arg[1]); break;
	case PROSPER_HW_LOG_TRACK_GRAN: prosper_hw_set_gran(&client_hw, (UInt)arg[1]); break;
	case PROSPER_HW_TRACK_MIN: *ret = client_hw.track_min; break;
	case PROSPER_HW_TRACK_SYNC: *ret = prosper_hw_sync(&client_hw); break;
	case PROSPER_HW_FLUSH: prosper_hw_flush(&client_hw); break;
	case PROSPER_HW_CHECKPOINT: checkpoint(); break;
	case PROSPER_HW_RUNNING: *ret = 1; break;
	default: return False;
	}
	return True;
}

/*------------------------------------------------------------*/
/*--- Finish                                               ---*/
/*------------------------------------------------------------*/

static void pr_fini(Int exitcode)
{
	/* No checkpoint at exit: the program is over, and a tail interval after main returned
	 * would only dilute the per-checkpoint averages. */
	VG_(umsg)("prosper: %llu checkpoints, %llu instructions, %llu stack stores (%llu below the final SP)\n",
		  checkpoints, instrs, stack_stores, beyond_sp_stores);
	VG_(umsg)("prosper: per checkpoint after the first: dirtybit %llu B, exact %llu B\n",
		  checkpoints > 1 ? dirtybit_bytes / (checkpoints - 1) : 0,
		  checkpoints > 1 ? exact_bytes / (checkpoints - 1) : 0);
	for (Int i = 0; i < ncfg; i++) {
		struct config *c = &cfgs[i];
		VG_(umsg)("prosper: gran %3u table %2u hwm %2u lwm %2u: %llu B/ckpt, bitmap loads %llu stores %llu, "
			  "soundness mismatches %llu\n", 1u << c->log_gran, c->hw.cfg.table_entries, c->hw.cfg.hwm,
			  c->hw.cfg.lwm, checkpoints > 1 ? c->bytes / (checkpoints - 1) : 0, (ULong)c->hw.c.bitmap_loads,
			  (ULong)c->hw.c.bitmap_stores, c->mismatches);
	}
	if (!clo_json)
		return;
	VgFile *f = VG_(fopen)(clo_json, VKI_O_CREAT | VKI_O_TRUNC | VKI_O_WRONLY, VKI_S_IRUSR | VKI_S_IWUSR);
	if (!f) {
		VG_(umsg)("prosper: cannot write %s\n", clo_json);
		return;
	}
	VG_(fprintf)(f, "{\"checkpoints\": %llu, \"instructions\": %llu, \"interval_instr\": %lld, "
			"\"stack_base\": %lu, \"stack_top\": %lu, \"stores\": %llu, \"stack_stores\": %llu, "
			"\"beyond_sp_stores\": %llu, \"first_checkpoint_bytes\": %llu, \"dirtybit_bytes\": %llu, "
			"\"exact_bytes\": %llu, \"exact_written_bytes\": %llu, \"exit_code\": %d, \"configs\": [",
		     checkpoints, instrs, clo_interval, stk_base, stk_top, stores_seen, stack_stores, beyond_sp_stores,
		     first_ckpt_bytes, dirtybit_bytes, exact_bytes, exact_written_bytes, exitcode);
	for (Int i = 0; i < ncfg; i++) {
		struct config *c = &cfgs[i];
		struct prosper_hw_counters *k = &c->hw.c;
		VG_(fprintf)(f, "%s{\"gran\": %u, \"table\": %u, \"hwm\": %u, \"lwm\": %u, \"bytes\": %llu, "
				"\"records\": %llu, \"runs\": %llu, \"words_scanned\": %llu, \"words_zeroed\": %llu, "
				"\"max_log_bytes\": %llu, \"bitmap_loads\": %llu, \"bitmap_stores\": %llu, "
				"\"redundant_stores\": %llu, \"hits\": %llu, \"misses\": %llu, \"hwm_writeouts\": %llu, "
				"\"lwm_evictions\": %llu, \"random_evictions\": %llu, \"flush_writeouts\": %llu, "
				"\"stores_tracked\": %llu, \"granules_marked\": %llu, \"soundness_mismatches\": %llu, "
				"\"soundness_bytes_compared\": %llu}",
			     i ? ", " : "", 1u << c->log_gran, c->hw.cfg.table_entries, c->hw.cfg.hwm, c->hw.cfg.lwm,
			     c->bytes, c->records, c->runs, c->words_scanned, c->words_zeroed, c->max_log,
			     (ULong)k->bitmap_loads, (ULong)k->bitmap_stores, (ULong)k->redundant_stores, (ULong)k->hits,
			     (ULong)k->misses, (ULong)k->hwm_writeouts, (ULong)k->lwm_evictions, (ULong)k->random_evictions,
			     (ULong)k->flush_writeouts, (ULong)k->stores_tracked, (ULong)k->granules_marked, c->mismatches,
			     c->compared);
	}
	VG_(fprintf)(f, "]}\n");
	VG_(fclose)(f);
}

/*------------------------------------------------------------*/
/*--- Setup                                                ---*/
/*------------------------------------------------------------*/

/* parse_list -- "8,16" into numbers; returns the count or -1. */
static Int parse_list(const HChar *s, ULong *out, Int max, HChar sep)
{
	Int n = 0;
	while (*s) {
		if (n == max)
			return -1;
		HChar *end;
		out[n++] = VG_(strtoull10)(s, &end);
		if (end == s)
			return -1;
		s = end;
		if (*s == sep || *s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return n;
}

static void pr_post_clo_init(void)
{
	ULong grans[8], tabs[3 * MAX_CONFIGS];
	Int ng = parse_list(clo_gran, grans, 8, ',');
	Int nt = parse_list(clo_tables, tabs, 3 * MAX_CONFIGS, ':');
	if (ng <= 0 || nt <= 0 || nt % 3)
		VG_(fmsg_bad_option)("--gran / --tables", "expected --gran=8,16 and --tables=16:24:8[,T:H:L]\n");
	ncfg = 0;
	for (Int t = 0; t < nt; t += 3)
		for (Int g = 0; g < ng; g++) {
			UInt lg = 0;
			while ((1ull << lg) < grans[g])
				lg++;
			if ((1ull << lg) != grans[g] || lg < 3 || lg > 7)
				VG_(fmsg_bad_option)("--gran", "granularities are 8, 16, 32, 64 or 128\n");
			if (ncfg == MAX_CONFIGS)
				VG_(fmsg_bad_option)("--gran / --tables", "at most 32 configurations\n");
			struct config *c = &cfgs[ncfg++];
			struct prosper_hw_config hc;
			prosper_hw_config_default(&hc);
			hc.table_entries = (UInt)tabs[t];
			hc.hwm = (UInt)tabs[t + 1];
			hc.lwm = (UInt)tabs[t + 2];
			hc.log_gran = lg;
			if (prosper_hw_init(&c->hw, &hc, &mem_ops) != 0)
				VG_(fmsg_bad_option)("--tables", "table 1..64, HWM 1..32, LWM 0..32\n");
			c->log_gran = lg;
		}
	struct prosper_hw_config cc;
	prosper_hw_config_default(&cc);
	prosper_hw_init(&client_hw, &cc, &mem_ops);
	next_ckpt = (ULong)clo_interval;
}

static void pr_pre_clo_init(void)
{
	VG_(details_name)("prosper");
	VG_(details_version)("0.1");
	VG_(details_description)("the Prosper stack-persistence hardware, emulated");
	VG_(details_copyright_author)("Copyright (C) the Prosper developers.");
	VG_(details_bug_reports_to)("the Prosper issue tracker");
	VG_(details_avg_translation_sizeB)(400);
	VG_(basic_tool_funcs)(pr_post_clo_init, pr_instrument, pr_fini);
	VG_(needs_command_line_options)(pr_process_cmd_line_option, pr_print_usage, pr_print_debug_usage);
	VG_(needs_client_requests)(pr_handle_client_request);
	VG_(track_post_mem_write)(pr_post_mem_write);
}

VG_DETERMINE_INTERFACE_VERSION(pr_pre_clo_init)
