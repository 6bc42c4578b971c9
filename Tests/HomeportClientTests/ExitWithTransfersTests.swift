import Foundation
import HomeportTestSupport
import Testing

/// Both programs exit while a transfer may still run on another thread (a race's losing address,
/// aborted in the background; a push in its TLS handshake). OpenSSL must then not free its state
/// in an `atexit` handler under that thread: the first initialization of OpenSSL in the process
/// asks it not to, and its cleanup never runs. Watched from outside, in a debugger: a crash of
/// that kind shows only now and then, under load.
@Suite("Exit with transfers still running: OpenSSL keeps its state", .tags(.process))
struct ExitWithTransfersTests {
    /// The first argument register, where OpenSSL's options arrive.
    static let firstArgument: String = {
        #if arch(arm64)
            "$x0"
        #else
            "$rdi"
        #endif
    }()

    /// Runs `program` under gdb; returns the options of each OpenSSL initialization, in order, and
    /// whether OpenSSL's cleanup ran, with gdb's output.
    static func watchOpenSSL(_ program: String, _ arguments: [String], environment: [String: String] = [:]) throws
        -> (initializations: [UInt64], cleanedUp: Bool, exited: Bool, output: String)
    {
        let commands = """
            set breakpoint pending on
            break OPENSSL_init_crypto
            commands
            silent
            printf "openssl-init %#lx\\n", \(firstArgument)
            continue
            end
            break OPENSSL_cleanup
            commands
            silent
            printf "openssl-cleanup-at-exit\\n"
            continue
            end
            run
            """
        try #require(
            FileManager.default.isExecutableFile(atPath: "/usr/bin/gdb"),
            "gdb is not installed (scripts/test installs it)")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let script = directory.file("commands.gdb")
        try commands.write(toFile: script, atomically: true, encoding: .utf8)
        // The test process's threads block signals, and a child inherits the mask; gdb waits for
        // SIGCHLD, so it starts from a shell that clears the mask first.
        let unblocked =
            "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execvp(sys.argv[1], sys.argv[1:])"
        let run = try ServerProcess.runProgram(
            "/usr/bin/python3",
            ["-c", unblocked, "gdb", "-batch", "-nx", "-iex", "set complaints 0", "-x", script, "--args", program]
                + arguments, environment: environment, timeout: 120)
        let output = run.output + run.error
        let initializations = output.split(separator: "\n").compactMap { line -> UInt64? in
            guard line.hasPrefix("openssl-init ") else { return nil }
            return UInt64(line.dropFirst("openssl-init 0x".count), radix: 16)
        }
        return (
            initializations, output.contains("openssl-cleanup-at-exit"), output.contains("[Inferior 1 (process"),
            output
        )
    }

    /// `OPENSSL_INIT_NO_ATEXIT` in OpenSSL's headers.
    static let noAtExit: UInt64 = 0x0008_0000

    @Test("homeport: the first initialization asks OpenSSL to keep its state, and no cleanup runs at exit")
    func client() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        // A command that creates the transport (libcurl initializes OpenSSL) and exits 1.
        let watched = try Self.watchOpenSSL(
            ServerProcess.clientPath, ["conformance", "http://127.0.0.1:1", "--allow-http", "--timeout", "1"],
            environment: ["HOMEPORT_HOME": home.path])
        #expect(watched.exited, "\(watched.output.suffix(2000))")
        let first = try #require(watched.initializations.first, "OpenSSL was never initialized: \(watched.output)")
        #expect(first & Self.noAtExit != 0, "first initialization \(String(first, radix: 16))")
        #expect(watched.initializations.count > 1, "libcurl initialized OpenSSL after it")
        #expect(!watched.cleanedUp)
    }

    @Test("homeport-server: the same, for a command that hashes")
    func server() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let watched = try Self.watchOpenSSL(
            ServerProcess.binary,
            ["product-keys", "create", "journal", "--database", "sqlite:" + directory.file("homeport.sqlite")])
        #expect(watched.exited && watched.output.contains("exited normally"), "\(watched.output.suffix(2000))")
        let first = try #require(watched.initializations.first, "OpenSSL was never initialized: \(watched.output)")
        #expect(first & Self.noAtExit != 0, "first initialization \(String(first, radix: 16))")
        #expect(!watched.cleanedUp)
    }
}
