import Foundation
import HomeportCrypto

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file that holds a secret (a key, a credential): made once, mode 0600, never replaced, and
/// refused when others may read it, as ssh refuses a private key others may read.
enum PrivateFile {
    /// Reads the file at `path` (`what` names it in messages). With `create`, a missing file is
    /// made first with `contents()`: written whole under another name and then linked into place,
    /// which fails if the file appeared meanwhile, so two processes starting at once both read
    /// the one file, never one still being written.
    static func read(_ path: String, what: String, create contents: (() throws -> String)? = nil) throws -> Data {
        if let contents, !FileManager.default.fileExists(atPath: path) {
            let temporary = path + ".\(getpid()).\(Digest.hex(try SystemRandom().bytes(6))).new"
            let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o600)
            guard descriptor >= 0 else {
                throw ConfigurationError("could not create the \(what) \(path): \(String(cString: strerror(errno)))")
            }
            defer { unlink(temporary) }
            let text = Array(try contents().utf8)
            let written = text.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            let synced = fsync(descriptor)
            close(descriptor)
            guard written == text.count, synced == 0 else {
                throw ConfigurationError("could not write the \(what) \(path)")
            }
            if link(temporary, path) != 0, errno != EEXIST {
                throw ConfigurationError("could not create the \(what) \(path): \(String(cString: strerror(errno)))")
            }
        }
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw ConfigurationError("the \(what) \(path) cannot be read: \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & 0o077 == 0 else {
            throw ConfigurationError(
                "the \(what) \(path) may be read by others (mode \(String(status.st_mode & 0o777, radix: 8))); "
                    + "chmod 600 it")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("the \(what) \(path) cannot be read")
        }
        return data
    }

    /// A warning for a secret file the server reads as its operator keeps it (a TLS key, a mail
    /// password, a provider's client secret) when every user of the machine may open it; `nil`
    /// when they may not, or when it cannot be looked at (its reader says so). Unlike ``read(_:what:create:)``
    /// it allows a group (a TLS key is often 0640, owned by a certificate manager's group) and
    /// refuses nothing: it was never checked, and a file that worked must not stop a server.
    static func exposure(_ path: String, what: String) -> String? {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & 0o007 != 0 else { return nil }
        return
            "every user of this machine may open the \(what) \(path) (mode \(String(status.st_mode & 0o777, radix: 8))): "
            + "chmod 600 it, or 640 with a group the server runs in"
    }
}
