// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// entryjob: functions whose first instruction is a mov or lea, for the entries a uprobe program
// does in the kernel's place (user/resolve/entryinsn.h; tests/e2e/trace.bats, the `entries`
// step of `make vm-next`'s guest). x86-64 assembly, so that the probed instruction is exactly
// the one named: each form entryinsn.c decodes (mov reg,reg, 32-bit movs that clear the upper
// half, mov $imm32 zero- and sign-extended, movabs, lea with rip, base, index and scale, a 32-bit
// lea), into every register that may be done (rax, rbx, r10-r15), one after endbr64, one whose
// ret follows at once (the next trap at the address the program moved ip to), and one into an
// argument register, which is left to the kernel. Elsewhere the same functions in C.
//
//   entryjob READY COUNTS [ROUNDS]
//
// READY gets the pid; the work starts on SIGUSR1 (so a tracer attaches by pid first). Each round
// calls every ej_* function with arguments that change from round to round and compares each
// result with the value computed here in C; COUNTS gets
//   {"pid":P,"checksum":"X","mismatches":M,"calls":{"ej_rax":N,...}}
// A probe that did an instruction wrong shows as mismatches (or a crash); the checksum is the
// untraced run's.
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef uint64_t (*ej_fn)(uint64_t, uint64_t);

/* what ej_rip's lea points at */
__attribute__((used)) const char ej_anchor[8] = "anchor";

#if defined(__x86_64__)
/*
 * ejt_saved calls @fn(a, b) with rbx and r12-r15 saved around it: the functions that start by
 * writing one of those (callee-saved) registers cannot save it first.
 */
__asm__(".pushsection .text\n"
	".p2align 4\n"
	".type ejt_saved, @function\n"
	"ejt_saved:\n"
	"\tpush %rbx\n\tpush %r12\n\tpush %r13\n\tpush %r14\n\tpush %r15\n"
	"\tmov %rdi, %rax\n\tmov %rsi, %rdi\n\tmov %rdx, %rsi\n\tcall *%rax\n"
	"\tpop %r15\n\tpop %r14\n\tpop %r13\n\tpop %r12\n\tpop %rbx\n\tret\n"
	".size ejt_saved, . - ejt_saved\n"
#define EJ(name, body) \
	".globl " #name "\n.p2align 4\n.type " #name ", @function\n" #name ":\n" body \
	".size " #name ", . - " #name "\n"
	EJ(ej_rax, "\tmov %rdi, %rax\n\tret\n")
	EJ(ej_imm, "\tmov $0x9e3779b9, %eax\n\tadd %rdi, %rax\n\tret\n")
	EJ(ej_neg, "\tmov $-5, %rax\n\timul %rdi, %rax\n\tret\n")
	EJ(ej_rip, "\tlea ej_anchor(%rip), %rax\n\tret\n")
	EJ(ej_r10, "\tlea (%rdi,%rsi,8), %r10\n\tlea 1(%r10), %rax\n\tret\n")
	EJ(ej_r11, "\tlea -2(,%rsi,4), %r11d\n\tadd %edi, %r11d\n\tmov %r11, %rax\n\tret\n")
	EJ(ej_cet, "\tendbr64\n\tmov %rdi, %r11\n\tlea 5(%r11), %rax\n\tret\n")
	EJ(ej_rbx, "\tmov %rdi, %rbx\n\tlea 0x11(%rbx), %rax\n\tret\n")
	EJ(ej_r12, "\tlea 7(%rdi,%rdi,2), %r12\n\tmov %r12, %rax\n\tret\n")
	EJ(ej_r13, "\tmovabs $0x0123456789abcdef, %r13\n\txor %rdi, %r13\n\tmov %r13, %rax\n"
	   "\tret\n")
	EJ(ej_r14, "\tmov %edi, %r14d\n\tmov %r14, %rax\n\tret\n")
	EJ(ej_r15, "\tlea -0x40(%rsp), %r15\n\tsub %rsp, %r15\n\tadd %rdi, %r15\n"
	   "\tmov %r15, %rax\n\tret\n")
	EJ(ej_arg, "\tmov $0x1f, %esi\n\tlea (%rdi,%rsi), %rax\n\tret\n")
	".popsection\n");
#undef EJ

uint64_t ejt_saved(ej_fn fn, uint64_t a, uint64_t b);
uint64_t ej_rax(uint64_t, uint64_t), ej_imm(uint64_t, uint64_t), ej_neg(uint64_t, uint64_t),
	ej_rip(uint64_t, uint64_t), ej_r10(uint64_t, uint64_t), ej_r11(uint64_t, uint64_t),
	ej_cet(uint64_t, uint64_t), ej_rbx(uint64_t, uint64_t), ej_r12(uint64_t, uint64_t),
	ej_r13(uint64_t, uint64_t), ej_r14(uint64_t, uint64_t), ej_r15(uint64_t, uint64_t),
	ej_arg(uint64_t, uint64_t);
#define SAVED(f) 1
#else
/* the same results, compiled as the compiler likes */
#define EJ(name, expr) \
	__attribute__((noinline, noipa, used)) uint64_t name(uint64_t a, uint64_t b) \
	{ (void)a; (void)b; return (expr); }
EJ(ej_rax, a)
EJ(ej_imm, 0x9e3779b9ull + a)
EJ(ej_neg, (uint64_t)-5 * a)
EJ(ej_rip, (uint64_t)(uintptr_t)&ej_anchor)
EJ(ej_r10, a + b * 8 + 1)
EJ(ej_r11, (uint32_t)(b * 4 - 2 + a))
EJ(ej_cet, a + 5)
EJ(ej_rbx, a + 0x11)
EJ(ej_r12, a * 3 + 7)
EJ(ej_r13, 0x0123456789abcdefull ^ a)
EJ(ej_r14, (uint32_t)a)
EJ(ej_r15, a - 0x40)
EJ(ej_arg, a + 0x1f)
#undef EJ
#define SAVED(f) 0
static uint64_t ejt_saved(ej_fn fn, uint64_t a, uint64_t b)
{
	return fn(a, b);
}
#endif

struct ej {
	const char *name;
	ej_fn fn;
	int saved;		/* called through ejt_saved */
	uint64_t calls;
};

static struct ej fns[] = {
	{ "ej_rax", ej_rax, 0, 0 }, { "ej_imm", ej_imm, 0, 0 }, { "ej_neg", ej_neg, 0, 0 },
	{ "ej_rip", ej_rip, 0, 0 }, { "ej_r10", ej_r10, 0, 0 }, { "ej_r11", ej_r11, 0, 0 },
	{ "ej_cet", ej_cet, 0, 0 }, { "ej_rbx", ej_rbx, SAVED(ej_rbx), 0 },
	{ "ej_r12", ej_r12, SAVED(ej_r12), 0 }, { "ej_r13", ej_r13, SAVED(ej_r13), 0 },
	{ "ej_r14", ej_r14, SAVED(ej_r14), 0 }, { "ej_r15", ej_r15, SAVED(ej_r15), 0 },
	{ "ej_arg", ej_arg, 0, 0 },
};
#define NFN (sizeof(fns) / sizeof(fns[0]))

/* What function @i returns for (@a, @b), computed here */
static uint64_t want(size_t i, uint64_t a, uint64_t b)
{
	switch (i) {
	case 0: return a;
	case 1: return 0x9e3779b9ull + a;
	case 2: return (uint64_t)-5 * a;
	case 3: return (uint64_t)(uintptr_t)ej_anchor;
	case 4: return a + b * 8 + 1;
	case 5: return (uint32_t)((uint32_t)(b * 4 - 2) + (uint32_t)a);
	case 6: return a + 5;
	case 7: return a + 0x11;
	case 8: return a * 3 + 7;
	case 9: return 0x0123456789abcdefull ^ a;
	case 10: return (uint32_t)a;
	case 11: return a - 0x40;
	default: return a + 0x1f;
	}
}

static volatile sig_atomic_t go;

static void on_go(int sig)
{
	(void)sig;
	go = 1;
}

int main(int argc, char **argv)
{
	uint64_t rounds = argc > 3 ? strtoull(argv[3], NULL, 0) : 2000, sum = 0, bad = 0;
	uint64_t a = 0x0123456789abcdefull, b = 7;
	sigset_t none, usr1;
	FILE *f;

	if (argc < 3) {
		fprintf(stderr, "usage: entryjob READY COUNTS [ROUNDS]\n");
		return 2;
	}
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &none);
	signal(SIGUSR1, on_go);
	f = fopen(argv[1], "w");
	if (!f || fprintf(f, "%d\n", getpid()) < 0 || fclose(f))
		return 1;
	while (!go)
		sigsuspend(&none);
	for (uint64_t r = 0; r < rounds; r++) {
		for (size_t i = 0; i < NFN; i++) {
			uint64_t v = fns[i].saved ? ejt_saved(fns[i].fn, a, b) : fns[i].fn(a, b);

			bad += v != want(i, a, b);
			/* the anchor's address differs from run to run: not in the checksum */
			sum = sum * 31 + (i == 3 ? v - want(i, a, b) : v);
			fns[i].calls++;
		}
		a = a * 6364136223846793005ull + 1442695040888963407ull;
		b = a >> 33;
	}
	f = fopen(argv[2], "w");
	if (!f)
		return 1;
	fprintf(f, "{\"pid\":%d,\"checksum\":\"%016llx\",\"mismatches\":%llu,\"calls\":{", getpid(),
		(unsigned long long)sum, (unsigned long long)bad);
	for (size_t i = 0; i < NFN; i++)
		fprintf(f, "%s\"%s\":%llu", i ? "," : "", fns[i].name,
			(unsigned long long)fns[i].calls);
	fprintf(f, "}}\n");
	return fclose(f) || bad ? 1 : 0;
}
