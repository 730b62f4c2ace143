/* crc32c.h -- CRC-32C (Castagnoli), the one checksum of every on-media structure.
 *
 * Freestanding: no libc, so the Valgrind tool and the restore shim can link it.
 * crc = prosper_crc32c(0, buf, len) for a whole buffer; pass the previous result as the
 * first argument to continue over several pieces.  Check value: "123456789" -> 0xE3069283.
 */
#ifndef PROSPER_CRC32C_H
#define PROSPER_CRC32C_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

uint32_t prosper_crc32c(uint32_t crc, const void *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
