/* instrumented.c -- linked by bin/prosper-cc into every program it builds: tells the library,
 * before main, that the program's stores call the hooks (track.c), so containers may rely on
 * them instead of comparing every written segment with its checkpoint. */
void crpm_declare_instrumented(void);

__attribute__((constructor)) static void declare(void) { crpm_declare_instrumented(); }
