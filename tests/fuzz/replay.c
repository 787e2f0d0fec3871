/* main() for the fuzz targets outside a libFuzzer build: runs
 * LLVMFuzzerTestOneInput on every file named on the command line (a
 * directory: every file in it, in name order), so the checked-in corpus,
 * regressions included, runs in the normal suite (ctest fuzz/<target>_corpus).
 * A broken contract aborts, failing the test. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) { fprintf(stderr, "replay: cannot open %s\n", path); return 1; }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
  if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
    fprintf(stderr, "replay: cannot read %s\n", path);
    fclose(f);
    free(buf);
    return 1;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, (size_t)n);
  free(buf);
  return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

int main(int argc, char **argv) {
  int bad = 0, ran = 0;
  for (int i = 1; i < argc; i++) {
    struct stat sb;
    if (stat(argv[i], &sb) != 0) { fprintf(stderr, "replay: no such file %s\n", argv[i]); return 1; }
    if (!S_ISDIR(sb.st_mode)) { bad |= run_file(argv[i]); ran++; continue; }
    struct dirent **ents = NULL;
    int n = scandir(argv[i], &ents, NULL, by_name);
    for (int j = 0; j < n; j++) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[i], ents[j]->d_name);
      if (ents[j]->d_name[0] != '.' && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
        bad |= run_file(path);
        ran++;
      }
      free(ents[j]);
    }
    free(ents);
  }
  printf("replay: %d inputs, all returned\n", ran);
  if (ran == 0) { fprintf(stderr, "replay: no inputs (an empty corpus would pass silently)\n"); return 1; }
  return bad;
}
