// replay.c: the plain-program entry point of every fuzz target. Each file
// named, and each file in each directory named, goes once through the
// target's LLVMFuzzerTestOneInput; a target aborts on what it finds. Linked
// into the <target>_replay programs, which ctest runs over the committed
// corpora so every input ever found stays fixed.
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		fprintf(stderr, "replay: cannot open %s\n", path);
		return 1;
	}
	size_t cap = 4096, n = 0;
	uint8_t *buf = malloc(cap);
	size_t got;
	while (buf && (got = fread(buf + n, 1, cap - n, fp)) > 0) {
		n += got;
		if (n == cap) {
			uint8_t *grown = realloc(buf, cap *= 2);
			if (!grown) free(buf);
			buf = grown;
		}
	}
	fclose(fp);
	if (!buf) return 1;
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0, errors = 0;
	for (int a = 1; a < argc; ++a) {
		struct stat st;
		if (stat(argv[a], &st) == 0 && S_ISDIR(st.st_mode)) {
			DIR *dir = opendir(argv[a]);
			struct dirent *de;
			while (dir && (de = readdir(dir)) != NULL) {
				if (de->d_name[0] == '.') continue;
				char path[4096];
				snprintf(path, sizeof path, "%s/%s", argv[a], de->d_name);
				errors += replay_file(path);
				files++;
			}
			if (dir) closedir(dir);
		} else {
			errors += replay_file(argv[a]);
			files++;
		}
	}
	printf("%s: %d inputs replayed\n", argv[0], files);
	return errors || files == 0;
}
