/* What a machine charges for the two things a plugin's load and a first launch are made of
 * beside code: faulting in fresh pages, and reading a small file. `scripts/gpu-check run`
 * (tool:probe) prints these beside the figures, so that a figure that moves between machines
 * can be told apart from a change in opbox.
 *
 * usage: machine_probe DIR...   one line per measure: "<what> | <value>"
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int by_value(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* Median over 5 rounds of touching PAGES fresh anonymous pages, per page. */
static void page_faults(void) {
    enum { PAGES = 512, ROUNDS = 5 };
    long page = sysconf(_SC_PAGESIZE);
    double per_page[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        size_t len = (size_t)PAGES * (size_t)page;
        char* p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            printf("fresh page fault | mmap failed\n");
            return;
        }
        double start = now_us();
        for (size_t i = 0; i < len; i += (size_t)page) {
            p[i] = 1;
        }
        per_page[r] = (now_us() - start) / PAGES;
        munmap(p, len);
    }
    qsort(per_page, ROUNDS, sizeof per_page[0], by_value);
    printf("fresh page fault (%ld-byte pages) | %.2f us\n", page, per_page[ROUNDS / 2]);
}

/* open + fstat + read + close of a 16 KiB file in `dir` (a disk-cache entry's size order):
 * the first one, and the median of 50 more. */
static void small_reads(const char* dir) {
    enum { SIZE = 16384, RUNS = 51 };
    static char buf[SIZE];
    char path[4096];
    double took[RUNS];
    snprintf(path, sizeof path, "%s/opbox_machine_probe.%d", dir, (int)getpid());
    memset(buf, 7, sizeof buf);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) {
        printf("16 KiB file read in %s | cannot write there\n", dir);
        if (fd >= 0) {
            close(fd);
        }
        return;
    }
    close(fd);
    for (int i = 0; i < RUNS; i++) {
        double start = now_us();
        int f = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
        struct stat st;
        ssize_t n = f < 0 ? -1 : (fstat(f, &st), read(f, buf, sizeof buf));
        if (f >= 0) {
            close(f);
        }
        took[i] = now_us() - start;
        if (n != (ssize_t)sizeof buf) {
            printf("16 KiB file read in %s | read failed\n", dir);
            unlink(path);
            return;
        }
    }
    unlink(path);
    double first = took[0];
    qsort(took + 1, RUNS - 1, sizeof took[0], by_value);
    printf("16 KiB file read in %s | first %.1f us, then %.1f us\n", dir, first, took[RUNS / 2]);
}

int main(int argc, char** argv) {
    page_faults();
    for (int i = 1; i < argc; i++) {
        small_reads(argv[i]);
    }
    return 0;
}
