import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A JSON file that every process using the same client directory shares (`servers.json`,
/// `push-devices.json`, `catalogues.json`).
///
/// Every change is a read-modify-write under an exclusive lock on `<file>.lock`: the value is
/// read from disk after the lock is taken, changed, and written (write-then-rename) before it is
/// let go, so two processes never undo each other's changes (a sign-in waiting for a code, a
/// `homeport address remove` in another terminal). Reads see the file as it is now: it is read
/// again whenever it changed on disk since this process last read it.
final class SharedJSONFile<Value: Codable & Equatable & Sendable>: @unchecked Sendable {
    /// The file.
    let path: String
    /// What the file is, for errors ("the server directory").
    let what: String
    /// How long a change waits for another process's lock before it gives up and names the holder.
    let lockTimeout: Duration
    private let empty: Value
    private let lock = NSLock()
    private var cached: Value
    private var stamp: Stamp?

    /// What identifies one version of the file on disk: a rename gives it another inode.
    private struct Stamp: Equatable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: [Int]
        var changed: [Int]
    }

    /// Reads `path` (`empty` when it does not exist yet).
    init(path: String, empty: Value, what: String, lockTimeout: Duration = .seconds(10)) throws {
        self.path = path
        self.what = what
        self.empty = empty
        self.lockTimeout = lockTimeout
        let (value, stamp) = try Self.read(path, empty: empty, what: what)
        cached = value
        self.stamp = stamp
    }

    /// The value as stored now. A file that became unreadable since keeps the last value read
    /// (the next change reports it).
    var value: Value {
        lock.withLock {
            if Self.stamp(of: path) != stamp, let (value, stamp) = try? Self.read(path, empty: empty, what: what) {
                cached = value
                self.stamp = stamp
            }
            return cached
        }
    }

    /// Reads the stored value under the cross-process lock, changes it and, if it changed,
    /// writes it before the lock is let go.
    func change<T>(_ body: (inout Value) throws -> T) throws -> T {
        // The file's lock first: a reader in this process never waits behind another process.
        try FileLock.withExclusive(path + ".lock", timeout: lockTimeout) {
            try lock.withLock {
                let (stored, stamp) = try Self.read(path, empty: empty, what: what)
                var value = stored
                let result = try body(&value)
                cached = value
                self.stamp = stamp
                // Nothing changed, nothing written: a choice that confirms what is stored costs no
                // write (and no fsync) on the way to the request.
                if value != stored {
                    try AtomicFile.write(try Self.encoder.encode(value), to: path)
                    self.stamp = Self.stamp(of: path)
                }
                return result
            }
        }
    }

    private static func read(_ path: String, empty: Value, what: String) throws -> (Value, Stamp?) {
        let stamp = stamp(of: path)
        guard let data = FileManager.default.contents(atPath: path) else { return (empty, nil) }
        do {
            return (try decoder.decode(Value.self, from: data), stamp)
        } catch {
            throw ClientError.badAnswer(address: path, detail: "\(what) is damaged: \(error)")
        }
    }

    private static func stamp(of path: String) -> Stamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        #if canImport(Darwin)
            let (modified, changed) = (info.st_mtimespec, info.st_ctimespec)
        #else
            let (modified, changed) = (info.st_mtim, info.st_ctim)
        #endif
        return Stamp(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            modified: [Int(modified.tv_sec), Int(modified.tv_nsec)],
            changed: [Int(changed.tv_sec), Int(changed.tv_nsec)])
    }

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    private static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}

/// An exclusive `flock` on a lock file, taken by every process that changes a shared file.
enum FileLock {
    /// Runs `body` holding the lock on `path`. Waits at most `timeout` for another process to let
    /// it go; then throws, naming the process that holds it (each holder writes its pid and name
    /// into the lock file).
    static func withExclusive<T>(_ path: String, timeout: Duration, _ body: () throws -> T) throws -> T {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ClientError.vault("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        // Closing the descriptor releases the lock, whatever happens below.
        defer { close(fd) }
        let deadline = ContinuousClock.now + timeout
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                throw ClientError.vault("cannot lock \(path): \(String(cString: strerror(errno)))")
            }
            guard ContinuousClock.now < deadline else {
                throw ClientError.vault(
                    "\(path) is still locked after \(timeout) by \(holder(fd)); "
                        + "let that command finish (or stop it), then try again")
            }
            usleep(5_000)
        }
        let me = "process \(getpid()) (\(ProcessInfo.processInfo.processName))"
        if ftruncate(fd, 0) == 0 {
            _ = me.withCString { pwrite(fd, $0, strlen($0), 0) }
        }
        return try body()
    }

    /// Who wrote the lock file last: the holder, while the lock is held.
    private static func holder(_ fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = pread(fd, &buffer, buffer.count, 0)
        let text = count > 0 ? ServerText.clean(String(decoding: buffer[0..<count], as: UTF8.self)) : ""
        return text.isEmpty ? "another process" : text
    }
}
