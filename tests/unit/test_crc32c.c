/* test_crc32c.c -- CRC-32C against its published check value and a bitwise reference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "prosper/crc32c.h"

static uint32_t reference(const unsigned char *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;
	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
	}
	return ~c;
}

int main(void)
{
	int fails = 0;
	if (prosper_crc32c(0, "123456789", 9) != 0xE3069283u) {
		printf("check value wrong: %08x\n", prosper_crc32c(0, "123456789", 9));
		fails++;
	}
	unsigned char buf[1000];
	srand(7);
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (unsigned char)rand();
	for (size_t off = 0; off < 9; off++)
		for (size_t n = 0; n + off <= sizeof buf; n += 37) {
			uint32_t want = reference(buf + off, n);
			uint32_t whole = prosper_crc32c(0, buf + off, n);
			uint32_t split = prosper_crc32c(prosper_crc32c(0, buf + off, n / 3), buf + off + n / 3, n - n / 3);
			if (whole != want || split != want) {
				printf("mismatch off=%zu n=%zu\n", off, n);
				fails++;
			}
		}
	printf("%d passed, %d failed\n", fails ? 0 : 1, fails);
	return fails != 0;
}
