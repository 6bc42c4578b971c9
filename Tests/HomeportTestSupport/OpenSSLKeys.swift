import Foundation

/// Private keys made by the `openssl` command line: an independent maker of PEM keys.
public enum OpenSSLKeys {
    /// `openssl ARGUMENTS…` (as `genpkey -algorithm EC …`); its output, the key in PEM.
    public static func make(_ arguments: [String]) throws -> String {
        let made = try ServerProcess.runProgram("/usr/bin/openssl", arguments)
        guard made.status == 0 else { throw RawHTTPError("openssl failed: \(made.error)") }
        return made.output
    }

    /// A fresh P-256 key in PKCS#8 PEM, as Apple's `.p8` files are.
    public static func p256() throws -> String {
        try make(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])
    }
}
