# A stand-in for Windows' bcryptprimitives.dll, which Wine 8 lacks: Rust-built extension modules
# (pydantic-core, rpds-py, cryptography) import its ProcessPrng and fail to load without it.
# ProcessPrng(buffer, size) fills the buffer with random bytes and always returns TRUE; here it
# asks advapi32's SystemFunction036 (RtlGenRandom) for them. Assembled by setup.sh.

    .text
    .globl ProcessPrng
ProcessPrng:
    subq $40, %rsp                          # the callee's shadow space, and 16-byte alignment
    call *__imp_SystemFunction036(%rip)     # (buffer in rcx, size in edx): the same arguments
    movl $1, %eax
    addq $40, %rsp
    ret

    .globl DllMain
DllMain:
    movl $1, %eax
    ret
