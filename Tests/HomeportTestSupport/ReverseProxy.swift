import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The reverse proxies the deployment guide and the samples put in front of Homeport, run as
/// Debian packages them, for a test.
public enum ReverseProxy {
    /// Debian's nginx with `site` (one process, no privilege drop, files in `scratch`), once it
    /// listens on `port`.
    public static func nginx(_ site: String, port: Int, in scratch: TemporaryDirectory) throws -> Process {
        let d = scratch.path
        try """
        daemon off; master_process off; worker_processes 1; pid \(d)/nginx.pid; error_log \(d)/error.log;
        events {}
        http { access_log off; client_body_temp_path \(d); proxy_temp_path \(d); \(site) }
        """.write(toFile: scratch.file("nginx.conf"), atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-c", scratch.file("nginx.conf"), "-p", d]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.spawn()
        guard RawHTTP.waitUntilListening(port: port, seconds: 30) else {
            process.stop()
            throw RawHTTPError(
                "nginx did not start: \((try? String(contentsOfFile: d + "/error.log", encoding: .utf8)) ?? "")")
        }
        return process
    }

    /// Caddy with `site(port)` (its admin endpoint off) on a free port. A port found free can be
    /// taken by another test's connection before Caddy binds it: Caddy then exits, and another
    /// port is tried.
    public static func caddy(in scratch: TemporaryDirectory, _ site: (Int) -> String) throws -> (Process, Int) {
        let d = scratch.path
        for _ in 0..<5 {
            let port = try RawHTTP.freePort()
            try ("{\n\tadmin off\n}\n" + site(port)).write(
                toFile: scratch.file("Caddyfile"), atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/caddy")
            process.arguments = ["run", "--config", scratch.file("Caddyfile"), "--adapter", "caddyfile"]
            process.environment = ProcessInfo.processInfo.environment.merging(
                ["HOME": d, "XDG_DATA_HOME": d, "XDG_CONFIG_HOME": d]) { $1 }
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.spawn()
            // Caddy can take seconds to start on a loaded machine: waiting is not what is tested.
            for _ in 0..<300 where !process.hasEnded {
                if RawHTTP.waitUntilListening(port: port, seconds: 0.1) { return (process, port) }
            }
            process.stop()
        }
        throw RawHTTPError("caddy did not start on any of five ports")
    }
}

/// Requests as curl sends them: another HTTP client than the project's own.
public enum Curl {
    /// A request as curl sends it (from `source`, or through the Unix socket `unixSocket`,
    /// trusting `caFile` when given): the status and the body.
    public static func call(
        _ url: String, method: String = "GET", from source: String = "127.0.0.1", unixSocket: String? = nil,
        caFile: String? = nil, headers: [String] = [], json: String? = nil
    ) throws -> (status: Int, body: String) {
        var arguments = ["-s", "-o", "-", "-w", "\n%{http_code}", "-X", method]
        arguments += unixSocket.map { ["--unix-socket", $0] } ?? ["--interface", source]
        if let caFile { arguments += ["--cacert", caFile] }
        for header in headers { arguments += ["-H", header] }
        if let json { arguments += ["-H", "Content-Type: application/json", "--data-binary", json] }
        let run = try ServerProcess.runProgram("/usr/bin/curl", arguments + [url], timeout: 20)
        guard let split = run.output.range(of: "\n", options: .backwards),
            let status = Int(run.output[split.upperBound...])
        else { throw RawHTTPError("curl \(url) failed (\(run.status)): \(run.error)") }
        return (status, String(run.output[..<split.lowerBound]))
    }
}
