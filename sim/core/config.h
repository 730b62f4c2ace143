// config.h -- the timing model's constants: sim/config/timing.conf (the papers' platform),
// compiled in; a named profile (sim/config/NAME.conf, `--profile NAME`) overrides some of them,
// then `--config FILE` overrides any key.  Every key is declared once, in timing.conf.
#pragma once
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace prosper::sim {

// ConfigError: what() is "FILE:LINE: reason" (exit code 2 at the command line).
struct ConfigError : std::runtime_error {
	using std::runtime_error::runtime_error;
};

// A named profile compiled in from sim/config/NAME.conf.
struct Profile {
	const char *name, *text;
};

// The profile that is timing.conf itself, with no override.
inline constexpr const char *kBaseProfile = "paper";

class Config {
public:
	Config();  // the defaults of timing.conf
	// Applies `key = value` lines of `text`; `name` names it in errors.  Unknown keys, missing
	// values, non-numbers and negative numbers are refused.
	void apply(const std::string &text, const std::string &name, bool declare = false);
	void load(const std::string &path);
	// Applies the profile `name` (kBaseProfile: nothing to apply); ConfigError if it is unknown.
	void use_profile(const std::string &name);
	static std::vector<std::string> profile_names();  // kBaseProfile first
	double get(const std::string &key) const;
	const std::map<std::string, double> &all() const { return values_; }

private:
	std::map<std::string, double> values_;
};

}  // namespace prosper::sim
