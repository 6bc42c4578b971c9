import CCurl
import HomeportCrypto

/// libcurl for the whole process: set up once, and what it says about itself.
package enum CurlLibrary {
    private static let initialized: Void = {
        // Before libcurl initializes OpenSSL, which would otherwise free its state at exit
        // under a transfer still running on another thread.
        CryptoLibrary.keepStateAtExit()
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
    }()

    /// Sets libcurl (and OpenSSL under it) up for the process, once; every handle does it first.
    package static func prepareProcess() {
        initialized
    }

    /// The CA file libcurl trusts by default (`""` when it names none).
    package static let defaultCAFile: String = {
        guard let easy = CurlEasy() else { return "" }
        return homeport_curl_default_ca_file(easy.handle).map { String(cString: $0) } ?? ""
    }()

    /// libcurl's own words for `code`.
    package static func describe(_ code: CURLcode) -> String {
        String(cString: curl_easy_strerror(code))
    }
}
