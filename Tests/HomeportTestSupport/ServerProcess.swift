import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real `homeport-server` process started by a test.
public final class ServerProcess: @unchecked Sendable {
    /// The built `homeport-server` executable, next to the test bundle.
    public static var binary: String {
        if let explicit = ProcessInfo.processInfo.environment["HOMEPORT_SERVER_BINARY"] { return explicit }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = bundle.deletingLastPathComponent()
        // Inside an .xctest bundle directory (Darwin), go up to the build directory.
        while directory.path.contains(".xctest") { directory = directory.deletingLastPathComponent() }
        return directory.appendingPathComponent("homeport-server").path
    }

    private let process = Process()
    private let errorLog: String
    /// Standard error's pipe, when the test reads (or stops reading) it itself.
    private let errorPipe: Pipe?
    /// The port printed on the `listening on` line (0 on a Unix socket).
    public let port: Int
    /// The whole `listening on` line.
    public let banner: String

    /// Starts `homeport-server serve` (or a product's server, `binary`) with `arguments` and waits
    /// until it prints its listen line.
    ///
    /// `--listen 127.0.0.1:0` is added unless `arguments` has `--listen`. A `launcher` (a command
    /// that runs the server, such as `timeout`) goes first; `command` is the command that serves
    /// (`gateway serve` for a push gateway). With `errorPipe`, standard error goes to a pipe
    /// (see ``closeStandardError()``) instead of a file.
    public init(
        binary: String = ServerProcess.binary, command serving: [String] = ["serve"], serve arguments: [String],
        environment: [String: String] = [:], launcher: [String] = [], startTimeout: Double = 30,
        errorPipe: Bool = false
    ) throws {
        var arguments = arguments
        if !arguments.contains("--listen") { arguments += ["--listen", "127.0.0.1:0"] }
        errorLog = NSTemporaryDirectory() + "homeport-server-\(UUID().uuidString).log"
        _ = FileManager.default.createFile(atPath: errorLog, contents: nil)
        let command = launcher + [binary] + serving + arguments
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        self.errorPipe = errorPipe ? Pipe() : nil
        process.standardError = self.errorPipe ?? FileHandle(forWritingAtPath: errorLog)
        process.standardInput = FileHandle.nullDevice
        try process.spawn()

        let line = Self.firstLine(of: output.fileHandleForReading, timeout: startTimeout)
        // A server on a Unix socket has no port: `listening on unix:/PATH`.
        var port: Int?
        if let line, line.contains("listening on unix:/") {
            port = 0
        } else if let line, let range = line.range(of: #"https?://\S+:(\d+)"#, options: .regularExpression) {
            port = Int(line[range].split(separator: ":").last ?? "")
        }
        guard let line, let port else {
            process.stop(signal: SIGTERM)
            let log = (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? ""
            throw RawHTTPError("homeport-server did not start (got \(line ?? "nothing")); stderr:\n\(log)")
        }
        self.port = port
        self.banner = line
    }

    /// `count` servers on one database with open sign-up and cheap hashes, sharing `outbox`; each
    /// also gets `arguments`.
    public static func replicas(_ count: Int, database: String, outbox: String, _ arguments: [String] = []) throws
        -> [ServerProcess]
    {
        try (0..<count).map { _ in
            try ServerProcess(
                serve: [
                    "--database", database, "--signup", "open", "--password-iterations", "1000", "--outbox", outbox,
                ] + arguments)
        }
    }

    deinit {
        process.stop(signal: SIGTERM)
        try? FileManager.default.removeItem(atPath: errorLog)
    }

    /// Closes the only reader of standard error's pipe, as a log reader that exits or a terminal
    /// that closes does: every write to it after fails (EPIPE), or raises SIGPIPE where that is
    /// not ignored.
    public func closeStandardError() {
        try? errorPipe?.fileHandleForReading.close()
    }

    /// Sends `signal` and waits for the process to exit; returns its exit status.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM) -> Int32 {
        process.stop(signal: signal)
    }

    /// Whether the process still runs.
    public var isRunning: Bool { !process.hasEnded }

    /// The process id.
    public var pid: Int32 { process.processIdentifier }

    /// The process's resident memory in bytes (`VmRSS` of `/proc/PID/status`), or `nil`.
    public var residentBytes: Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return nil }
        return kilobytes * 1024
    }

    /// Everything the process wrote to standard error so far.
    public var standardError: String {
        (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? ""
    }

    /// Standard error once `condition` holds of it, or as it is after `seconds`: the access log is
    /// written in batches, up to a tenth of a second after its requests.
    public func standardError(within seconds: Double = 5, until condition: (String) -> Bool) -> String {
        var text = standardError
        eventually(timeout: .milliseconds(Int(seconds * 1000))) {
            text = standardError
            return condition(text)
        }
        return text
    }

    /// Runs `homeport-server` with `arguments` to completion; a run still going after `timeout`
    /// seconds is killed (and then reports the signal's status), so a broken check cannot hang a test.
    public static func run(_ arguments: [String], environment: [String: String] = [:], timeout: Double = 60) throws
        -> (status: Int32, output: String, error: String)
    {
        try runProgram(binary, arguments, environment: environment, timeout: timeout)
    }

    /// The `homeport` client built beside the server.
    public static var clientPath: String { (binary as NSString).deletingLastPathComponent + "/homeport" }

    /// Runs the `homeport` client CLI built beside the server, with `input` on standard input.
    public static func runClient(
        _ arguments: [String], environment: [String: String] = [:], input: String = "", timeout: Double = 60
    ) throws -> (status: Int32, output: String, error: String) {
        try runProgram(clientPath, arguments, environment: environment, input: input, timeout: timeout)
    }

    /// Runs `executable` to completion, in `directory` when given, with this process's
    /// environment, `environment` added and the variables in `removing` taken out, and `input` on
    /// standard input; a run still going after `timeout` seconds is killed.
    public static func runProgram(
        _ executable: String, _ arguments: [String], directory: String? = nil, environment: [String: String] = [:],
        removing: Set<String> = [], input: String = "", timeout: Double = 60
    ) throws -> (status: Int32, output: String, error: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            .filter { !removing.contains($0.key) }
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        let stdin = Pipe()
        process.standardInput = stdin
        try process.spawn()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try? stdin.fileHandleForWriting.close()
        let pid = process.processIdentifier
        let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
        defer { watchdog.cancel() }
        // Both pipes are read at once (a program that fills one while the other is read to its
        // end would wait for the reader forever, and the reader for it). The run ends once the
        // program has exited and both pipes have ended, or a few seconds after it exited: a child
        // it left behind (the crash reporter a crashing Swift program starts) may keep the pipes
        // open, and must not hold the test.
        let collected = CollectedOutput()
        collected.read(output.fileHandleForReading, into: 0)
        collected.read(error.fileHandleForReading, into: 1)
        let status = process.waitForExit()
        let (outData, errData) = collected.waitForEnds(timeout: 5)
        return (
            status, String(decoding: outData, as: UTF8.self),
            String(decoding: errData, as: UTF8.self)
        )
    }

    private static func firstLine(of handle: FileHandle, timeout: Double) -> String? {
        final class Box: @unchecked Sendable { var line: String? }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var data = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                data.append(chunk)
                if let newline = data.firstIndex(of: 10) {
                    box.line = String(decoding: data[..<newline], as: UTF8.self)
                    break
                }
            }
            done.signal()
        }
        guard done.wait(timeout: .now() + timeout) == .success else { return nil }
        return box.line
    }
}

/// What a program wrote to its two pipes, read by a thread each.
final class CollectedOutput: @unchecked Sendable {
    private let condition = NSCondition()
    private var data = [Data(), Data()]
    private var ended = [false, false]

    /// Reads `handle` to its end on a thread of its own, into stream `index`.
    func read(_ handle: FileHandle, into index: Int) {
        Thread.detachNewThread { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                condition.withLock { data[index].append(chunk) }
            }
            condition.withLock {
                ended[index] = true
                condition.broadcast()
            }
        }
    }

    /// Both streams as read when both ended, or when `timeout` seconds passed.
    func waitForEnds(timeout: Double) -> (Data, Data) {
        let deadline = Date().addingTimeInterval(timeout)
        return condition.withLock {
            while !(ended[0] && ended[1]) && condition.wait(until: deadline) {}
            return (data[0], data[1])
        }
    }
}
