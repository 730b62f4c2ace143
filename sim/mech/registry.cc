// registry.cc -- mechanisms by name (each mech/*.cc registers itself at start-up).
#include <map>
#include <stdexcept>

#include "mechanism.h"

namespace prosper::sim {

static std::map<std::string, MechanismInfo> &registry()
{
	static std::map<std::string, MechanismInfo> r;  // built before main by static initializers
	return r;
}

int register_mechanism(MechanismInfo info)
{
	registry()[info.name] = std::move(info);
	return 0;
}

const MechanismInfo &find_mechanism(const std::string &name)
{
	auto it = registry().find(name);
	if (it == registry().end())
		throw std::invalid_argument("unknown mechanism \"" + name + "\"");
	return it->second;
}

std::vector<std::string> mechanism_names()
{
	std::vector<std::string> out;
	for (auto &[n, _] : registry())
		out.push_back(n);
	return out;
}

}  // namespace prosper::sim
