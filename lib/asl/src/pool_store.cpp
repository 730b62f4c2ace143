// pool_store.cpp -- snapshots in a persistent pool (see pool_store.hpp).
#include "pool_store.hpp"
#include <cstring>
#include <stdexcept>
#include <sys/stat.h>
#include "internal.hpp"
#include "prosper/crc32c.h"

namespace prosper::asl::detail {

namespace {
constexpr const char *kRegionName = "asl-heap";
}

void PoolStore::fail(const std::string &what, int rc)
{
	throw std::runtime_error("prosper::asl: " + what + " (" + path_ + "): " + prosper_pool_errormsg() + " [" +
				 std::to_string(rc) + "]");
}

PoolStore::PoolStore(const std::string &path, const Options &opt) : path_(path)
{
	struct stat sb;
	int rc;
	if (stat(path.c_str(), &sb) == 0) {
		rc = prosper_pool_open(path.c_str(), &pool_);
		if (rc < 0)
			fail("cannot open the pool", rc);
	} else {
		prosper_pool_config cfg;
		prosper_pool_config_default(&cfg);
		// both copies of the largest heap, in whole segments
		uint64_t seg = cfg.seg_size;
		cfg.capacity = 2 * ((opt.heap_reserve + seg - 1) / seg * seg);
		cfg.max_regions = 4;
		rc = prosper_pool_create(path.c_str(), &cfg, &pool_);
		if (rc < 0)
			fail("cannot create the pool", rc);
	}
	int idx = prosper_pool_region_find(pool_, kRegionName);
	if (idx >= 0) {
		prosper_region_info info;
		if ((rc = prosper_pool_region_get(pool_, idx, &info)) < 0)
			fail("cannot read the heap region", rc);
		region_ = static_cast<int>(info.id);
	}
}

PoolStore::~PoolStore()
{
	if (pool_)
		prosper_pool_close(&pool_);
}

uint64_t PoolStore::newest(SnapHeader &hdr)
{
	size_t len = 0;
	const void *blob = prosper_pool_blob(pool_, &len);
	if (!blob || len != sizeof hdr || region_ < 0)
		return 0;
	std::memcpy(&hdr, blob, sizeof hdr);
	SnapHeader c = hdr;
	c.crc = 0;
	if (hdr.magic != kSnapMagic || hdr.version != 1 || hdr.crc != prosper_crc32c(0, &c, sizeof c))
		throw std::runtime_error("prosper::asl: the pool's blob is not an asl snapshot header (" + path_ + ")");
	return hdr.seq;
}

void PoolStore::load(char *heap, uint64_t heap_bytes)
{
	std::lock_guard<std::mutex> g(mu_);
	int rc = prosper_pool_region_read(pool_, static_cast<uint32_t>(region_), 0, heap, heap_bytes);
	if (rc < 0)
		fail("cannot read the heap image", rc);
}

void PoolStore::begin(uint64_t heap_bytes, uint64_t heap_base)
{
	std::lock_guard<std::mutex> g(mu_);
	int rc;
	if (region_ < 0) {
		rc = prosper_pool_region_add(pool_, kRegionName, PROSPER_KIND_HEAP, PROSPER_REGION_BUFFERED, heap_base, heap_bytes,
					     3 /* PROT_READ|PROT_WRITE */);
		if (rc < 0)
			fail("cannot add the heap region", rc);
		region_ = rc;
		return;
	}
	prosper_region_info info;
	int idx = prosper_pool_region_find(pool_, kRegionName);
	if (idx < 0 || (rc = prosper_pool_region_get(pool_, idx, &info)) < 0)
		fail("heap region lost", idx < 0 ? idx : rc);
	if (info.length != heap_bytes && (rc = prosper_pool_region_resize(pool_, static_cast<uint32_t>(region_), heap_bytes)) < 0)
		fail("cannot resize the heap region", rc);
}

void PoolStore::write(uint64_t off, const void *src, uint64_t len)
{
	std::lock_guard<std::mutex> g(mu_);
	int rc = prosper_pool_write(pool_, static_cast<uint32_t>(region_), off, src, len);
	if (rc < 0)
		fail("cannot write the heap image", rc);
}

void PoolStore::commit(const SnapHeader &hdr)
{
	std::lock_guard<std::mutex> g(mu_);
	int rc = prosper_pool_commit(pool_, &hdr, sizeof hdr);
	if (rc < 0)
		fail("cannot commit the snapshot", rc);
}

} // namespace prosper::asl::detail
