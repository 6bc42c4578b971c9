import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A stand-in written in Python (`interop/NAME/standin.py`, or another script there, run by the
/// APNs stand-in's virtualenv: ``TestPeer/apns(_:)``) that listens on a free loopback port and
/// writes it to `DIRECTORY/port`: started, waited for, and stopped with its directory.
struct PythonStandIn {
    let process: Process
    let directory: TemporaryDirectory
    let port: Int

    /// Starts it; `what` names it in the error when it does not start.
    init(peer name: String, script: String = "standin.py", what: String) throws {
        let peer = try TestPeer.apns(name)
        let (source, python) = (peer.source, peer.python)
        directory = try TemporaryDirectory()
        process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [source + "/" + script, directory.path]
        process.standardOutput = FileHandle.nullDevice
        let errorLog = directory.file("stderr.log")
        _ = FileManager.default.createFile(atPath: errorLog, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: errorLog)
        try process.spawn()
        let (portFile, process) = (directory.file("port"), process)
        var written: Int?
        eventually(timeout: .seconds(60), every: .milliseconds(50)) {
            written = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0) }
            return written != nil || process.hasEnded
        }
        if let written {
            port = written
            return
        }
        process.stop()
        let log = (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? ""
        directory.remove()
        throw RawHTTPError("the \(what) did not start: \(log.suffix(2000))")
    }

    /// Stops it and removes its directory.
    func stop() {
        process.stop()
        directory.remove()
    }

    /// POSTs `object` as JSON to `path`; anything but 200 throws.
    func post(_ path: String, _ object: [String: Any]) throws -> RawResponse {
        let response = try RawHTTP.request(
            port: port, method: "POST", path: path, headers: [("Content-Type", "application/json")],
            body: try JSONSerialization.data(withJSONObject: object))
        guard response.status == 200 else {
            throw RawHTTPError("stand-in \(path): \(response.status) \(response.text)")
        }
        return response
    }
}
