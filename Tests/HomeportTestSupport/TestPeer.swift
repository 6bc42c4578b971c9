import Foundation

/// A test peer written in Python: its sources under `interop/` and the virtualenv `scripts/peers`
/// (or `scripts/test`) installs it into. Found through the environment `scripts/test` sets, or,
/// for a plain `swift test`, where `scripts/peers` put it; when it is in neither place, the error
/// says the one command that installs it.
public struct TestPeer: Sendable {
    /// The directory of its sources (`interop/apns`).
    public var source: String
    /// The virtualenv's Python.
    public var python: String

    /// The APNs stand-in's virtualenv, which the OpenID Connect, Web Push and FCM stand-ins share;
    /// `source` is `interop/NAME` (`apns`, `oidc`, `webpush`, `fcm`).
    public static func apns(_ name: String = "apns") throws -> TestPeer {
        try find(
            "the APNs stand-in", venv: "apns", source: name,
            sourceVariable: "HOMEPORT_TEST_\(name.uppercased())_DIR", pythonVariable: "HOMEPORT_TEST_APNS_PYTHON",
            install: "apns")
    }

    /// django-allauth (`interop/allauth`).
    public static func allauth() throws -> TestPeer {
        try find(
            "django-allauth", venv: "allauth", source: "allauth", sourceVariable: "HOMEPORT_TEST_ALLAUTH_DIR",
            pythonVariable: "HOMEPORT_TEST_ALLAUTH_PYTHON", install: "allauth")
    }

    /// aiosmtpd (`interop/smtp`).
    public static func smtp() throws -> TestPeer {
        try find(
            "the SMTP relay (aiosmtpd)", venv: "smtp", source: "smtp", sourceVariable: "HOMEPORT_TEST_SMTP_DIR",
            pythonVariable: "HOMEPORT_TEST_SMTP_PYTHON", install: "smtp")
    }

    private static func find(
        _ what: String, venv: String, source: String, sourceVariable: String, pythonVariable: String,
        install: String
    ) throws -> TestPeer {
        let environment = ProcessInfo.processInfo.environment
        if let directory = environment[sourceVariable], let python = environment[pythonVariable] {
            return TestPeer(source: directory, python: python)
        }
        let python = repositoryFile(".build/\(venv)-venv/bin/python")
        if FileManager.default.isExecutableFile(atPath: python) {
            return TestPeer(source: repositoryFile("interop/" + source), python: python)
        }
        throw RawHTTPError(
            "\(what) is not installed: run `scripts/peers \(install)` once (or the whole suite with scripts/test)")
    }
}
