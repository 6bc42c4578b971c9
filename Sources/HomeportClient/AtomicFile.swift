import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Files written so that a reader sees the old content or the new, never a part, and that are
/// owner-only from their first byte (created with the mode, not chmod-ed afterwards).
enum AtomicFile {
    /// Writes `data` to a new temporary file with `mode`, flushes it, and renames it over `path`.
    static func write(_ data: Data, to path: String, mode: mode_t = 0o600) throws {
        let temporary = path + ".tmp-\(UUID().uuidString)"
        try create(temporary, data, mode: mode)
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw ClientError.vault("cannot replace \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Creates `path` with `data` only if it does not exist yet; false when it already did.
    static func createExclusively(_ path: String, _ data: Data, mode: mode_t = 0o600) throws -> Bool {
        do {
            try create(path, data, mode: mode)
            return true
        } catch FileExists.exists {
            return false
        }
    }

    private enum FileExists: Error { case exists }

    private static func create(_ path: String, _ data: Data, mode: mode_t) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else {
            if errno == EEXIST { throw FileExists.exists }
            throw ClientError.vault("cannot create \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let written = data.withUnsafeBytes { buffer -> Int in
            var offset = 0
            while offset < buffer.count {
                #if canImport(Glibc)
                    let count = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                #else
                    let count = Darwin.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                #endif
                if count <= 0 { return -1 }
                offset += count
            }
            return offset
        }
        guard written == data.count, fsync(fd) == 0 else {
            unlink(path)
            throw ClientError.vault("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }
}
