#if canImport(Glibc)
    import Glibc
#endif

extension ServeCommand {
    /// Keeps glibc's allocator from handing memory back to the kernel after every request.
    ///
    /// Each worker thread allocates from an arena of its own; by default, freeing the top of an
    /// arena past 128 KiB returns it (`madvise`), and the next request faults the pages back in,
    /// with a TLB flush on every core each time. Under load that was a third of the server's CPU
    /// (the product API's notifications: 3,500 a second, 5,000 with these settings, resident
    /// memory unchanged). Memory is still returned past 64 MiB free at an arena's top. Settings
    /// the operator made in the environment (`MALLOC_TRIM_THRESHOLD_`, `MALLOC_TOP_PAD_`) win.
    static func tuneAllocator(environment: [String: String]) {
        #if canImport(Glibc)
            // <malloc.h> is not in Swift's Glibc module: mallopt is looked up, and its options
            // are the header's values (M_TRIM_THRESHOLD -1, M_TOP_PAD -2).
            typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
            guard let symbol = dlsym(nil, "mallopt") else { return }
            let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
            if environment["MALLOC_TRIM_THRESHOLD_"] == nil { _ = mallopt(-1, 64 << 20) }
            if environment["MALLOC_TOP_PAD_"] == nil { _ = mallopt(-2, 8 << 20) }
        #endif
    }
}
