// gemos.h -- what the Prosper paper's artifact's gemOS pays to "flush" a range, shared by the
// mechanisms modelled as that artifact ran them (ssp_gemos.cc, romulus_gemos.cc).
//
// Its clflush_multiline(addr, bytes) is: sfence; for each 64-byte line of the range, clwb; sfence.
// The clwb's operand is `"m"(fl_addr)`, the stack slot of the loop's own pointer variable, not the line
// it points to, and the kernel is built without optimisation: so each line "flushed" stores the loop
// variable (its kernel-stack line, in DRAM, becomes dirty) and writes that one line back, which the
// artifact's blocking core (gem5 TimingSimpleCPU) waits for; the data line itself is never written back.
// We charge exactly that, so that the figures it produced can be reproduced; a correct flush would
// write the data lines back instead (Machine::clwb_range).
#pragma once
#include <cstdint>
#include <vector>

#include "core/machine.h"

namespace prosper::sim {

constexpr uint64_t kGemosKernelStack = 0x0000e00000000000ull;  // the flush loop's variable (DRAM)

inline void gemos_flush(Machine &m, uint64_t addr, uint64_t bytes)
{
	m.sfence();
	for (uint64_t l = addr >> 6; l <= (addr + bytes - 1) >> 6; l++) {
		m.access(kGemosKernelStack, 8, true, kDram);
		m.clwb_dirty_wait(kDram);
	}
	m.sfence();
}

// What SSP's and Romulus's gemOS do at every checkpoint before their own work: flush every present
// page of the stack from SP's page up (`stack`), or of an NVM area, each after a software lookup of
// its PTE (validate_page_table, `pte_cycles`), whole.
inline void gemos_flush_present_pages(Machine &m, const std::vector<uint64_t> &pages, bool stack, uint64_t sp,
				      double pte_cycles)
{
	for (uint64_t p : pages) {
		if (stack && (p + 1) << 12 <= sp)
			continue;  // below SP's page: not flushed
		if (!stack)
			m.compute(pte_cycles);
		gemos_flush(m, p << 12, 4096);
	}
}

}  // namespace prosper::sim
