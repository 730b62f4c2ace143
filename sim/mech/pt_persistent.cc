// pt_persistent.cc -- Kindle's "persistent" scheme: the page-table pages live in NVM and every
// change is made durable at once, so recovery only points the page-table base register at the
// root again (resume costs nothing we model).
//   - a new table page is zeroed, each of its lines written back (clwb), then sfence: it is
//     durable before any entry links it;
//   - every entry write is followed by clwb of its line and sfence.
// So flushes = entry writes + 64 x table pages allocated, and fences = entry writes + tables.
#include "pt_scheme.h"

namespace prosper::sim {
namespace {

class PersistentTables : public PtScheme {
public:
	explicit PersistentTables(Machine &m) : m_(m) {}
	Mem table_mem() const override { return kNvm; }
	void apply(const PtOp &op) override
	{
		if (op.kind == PtOp::kAlloc) {
			zero_table(m_, op.frame, kNvm);
			m_.clwb_range(table_addr(op.frame), 1u << kPageShift);
			m_.sfence();
		} else if (op.kind == PtOp::kWrite) {
			uint64_t a = entry_addr(op.frame, op.index);
			m_.access(a, 8, true, kNvm);
			m_.clwb(a);
			m_.sfence();
		}
	}
	void interval_end() override {}
	double resume_cycles() const override { return 0; }

private:
	Machine &m_;
};

}  // namespace

std::unique_ptr<PtScheme> make_persistent_tables(Machine &m, const Config &) { return std::make_unique<PersistentTables>(m); }

}  // namespace prosper::sim
