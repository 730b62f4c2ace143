// config.h -- the timing model's constants: sim/config/timing.conf, compiled in, overridable
// key by key with `--config FILE`.  Every key is declared once, in that file.
#pragma once
#include <map>
#include <stdexcept>
#include <string>

namespace prosper::sim {

// ConfigError: what() is "FILE:LINE: reason" (exit code 2 at the command line).
struct ConfigError : std::runtime_error {
	using std::runtime_error::runtime_error;
};

class Config {
public:
	Config();  // the defaults of timing.conf
	// Applies `key = value` lines of `text`; `name` names it in errors.  Unknown keys, missing
	// values, non-numbers and negative numbers are refused.
	void apply(const std::string &text, const std::string &name, bool declare = false);
	void load(const std::string &path);
	double get(const std::string &key) const;
	const std::map<std::string, double> &all() const { return values_; }

private:
	std::map<std::string, double> values_;
};

}  // namespace prosper::sim
