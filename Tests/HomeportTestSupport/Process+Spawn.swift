import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension Process {
    /// The descriptors this process may hold open while Foundation starts a program.
    static let spawnDescriptorLimit = 1_000

    /// Starts the program, as `run()` does, once this process holds fewer than
    /// ``spawnDescriptorLimit`` open descriptors (waiting up to a minute for other tests to
    /// close theirs).
    ///
    /// On Linux, Foundation's `run()` (Swift 6.3.1) lists `/proc/self/fd` and copies the whole
    /// 256-byte name field of every entry (swift-corelibs-foundation#5472): with some 1,350
    /// descriptors open, the copy of the last entry of a full directory buffer reads past the
    /// buffer, and the test run crashes when the page after it is not mapped. Tests that hold
    /// hundreds of connections to a server in this process take it past 1,100 for a moment.
    public func spawn() throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while Self.openDescriptors() >= Self.spawnDescriptorLimit {
            guard ContinuousClock.now < deadline else {
                let program = executableURL?.path ?? "a program"
                let line = "starting \(program) with \(Self.openDescriptors()) descriptors open\n"
                FileHandle.standardError.write(Data(line.utf8))
                break
            }
            usleep(20_000)
        }
        try run()
    }

    /// How many of the first 4,096 descriptor numbers are open in this process (a new descriptor
    /// takes the lowest free number), counted without listing `/proc/self/fd`.
    static func openDescriptors() -> Int {
        (0..<4_096).reduce(0) { count, descriptor in fcntl(Int32(descriptor), F_GETFD) >= 0 ? count + 1 : count }
    }
}
