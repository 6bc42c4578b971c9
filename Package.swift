// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Homeport",
    // Synchronization's Mutex and Atomic (client and server) need macOS 15 and iOS 18.
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "HomeportWire", targets: ["HomeportWire"]),
        .library(name: "HomeportServer", targets: ["HomeportServer"]),
        .library(name: "HomeportClient", targets: ["HomeportClient"]),
        .library(name: "HomeportTesting", targets: ["HomeportTesting"]),
        // Test doubles and real-process helpers, for products' own tests (as Examples/BookOrbit's).
        .library(name: "HomeportTestSupport", targets: ["HomeportTestSupport"]),
        .executable(name: "homeport-server", targets: ["homeport-server"]),
        .executable(name: "homeport", targets: ["homeport"]),
    ],
    targets: [
        // C libraries, each behind a thin system-library target.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
        ),
        .systemLibrary(
            name: "CCrypt",
            providers: [.apt(["libcrypt-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "CNGHTTP2",
            pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"]), .brew(["libnghttp2"])]
        ),
        .systemLibrary(
            name: "CQRencode",
            pkgConfig: "libqrencode",
            providers: [.apt(["libqrencode-dev"]), .brew(["qrencode"])]
        ),
        .systemLibrary(name: "CEpoll"),
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"]), .brew(["libmicrohttpd"])]
        ),

        // Wire types shared by server and client: Foundation only.
        .target(name: "HomeportWire"),

        // Server-side building blocks, one concern each.
        // The background services' lifecycle: one protocol, one ordered group, the timer and the thread.
        .target(name: "HomeportLifecycle"),
        // Its batches of lines are written on the lifecycle's timer.
        .target(name: "HomeportLogging", dependencies: ["HomeportLifecycle"]),
        .target(
            name: "HomeportCrypto",
            dependencies: ["COpenSSL", .target(name: "CCrypt", condition: .when(platforms: [.linux]))]
        ),
        .target(name: "HomeportCommandLine"),
        // WebAuthn's ceremonies checked (CBOR, COSE keys, authenticator and client data), over OpenSSL.
        .target(name: "HomeportWebAuthn", dependencies: ["HomeportCrypto", "HomeportWire"]),
        .target(
            name: "HomeportHTTP",
            dependencies: ["CMicroHTTPD", "HomeportWire", "HomeportLogging", "HomeportLifecycle"]
        ),
        .target(
            name: "HomeportStorage",
            dependencies: ["CSQLite", "CLibPQ", "HomeportLogging", "HomeportLifecycle"]
        ),
        .target(name: "HomeportAPNs", dependencies: ["CNGHTTP2", "COpenSSL", "HomeportCrypto"]),
        // libcurl, wrapped once: a handle, its header list, and what a transfer's answer comes to.
        .target(name: "HomeportCurl", dependencies: ["CCurl", "HomeportCrypto"]),
        .target(
            name: "HomeportServer",
            dependencies: [
                "HomeportWire", "HomeportHTTP", "HomeportStorage", "HomeportCrypto",
                "HomeportLogging", "HomeportLifecycle", "HomeportAPNs", "HomeportCommandLine", "CCurl", "HomeportCurl",
                "CQRencode", "HomeportWebAuthn",
            ]
        ),
        // A product's tests: its server in process, signed-in requests, what it notified.
        .target(
            name: "HomeportTesting",
            dependencies: ["HomeportServer", "HomeportCurl", "CCurl", "HomeportWire", "HomeportStorage"]
        ),
        // The push gateway: a deployable of its own, on the server's shared parts.
        .target(
            name: "HomeportGateway",
            dependencies: [
                "HomeportServer", "HomeportWire", "HomeportHTTP", "HomeportLifecycle", "HomeportStorage",
                "HomeportCrypto",
                "HomeportLogging", "HomeportAPNs", "HomeportCommandLine", "HomeportCurl",
            ]
        ),
        .executableTarget(name: "homeport-server", dependencies: ["HomeportServer", "HomeportGateway"]),

        // The client library an app embeds, and its command-line face.
        .target(
            name: "HomeportClient",
            dependencies: [
                "HomeportWire",
                .target(name: "HomeportCrypto", condition: .when(platforms: [.linux])),
                .target(name: "CCurl", condition: .when(platforms: [.linux])),
                .target(name: "HomeportCurl", condition: .when(platforms: [.linux])),
            ]
        ),
        .executableTarget(
            name: "homeport",
            dependencies: ["HomeportClient", "HomeportCommandLine"]
        ),
        .executableTarget(
            name: "homeport-push-benchmark",
            dependencies: [
                "HomeportAPNs", "HomeportCrypto", .target(name: "CEpoll", condition: .when(platforms: [.linux])),
            ]
        ),
        .executableTarget(name: "homeport-product-benchmark", dependencies: ["HomeportServer"]),
        .executableTarget(
            name: "homeport-failover-benchmark",
            dependencies: ["HomeportClient", "HomeportWire"]
        ),

        // Tests.
        // Every Swift block of the client's iOS article, compiled (with stand-ins for what only
        // Apple's SDKs have); ClientArticleSnippetTests checks the blocks are these.
        .target(
            name: "HomeportClientSnippets", dependencies: ["HomeportClient", "HomeportWire"],
            path: "Tests/HomeportClientSnippets"
        ),
        .target(
            name: "HomeportTestSupport",
            dependencies: ["HomeportStorage", "HomeportLogging", "HomeportServer", "HomeportClient", "HomeportCrypto"],
            path: "Tests/HomeportTestSupport"
        ),
        .testTarget(name: "HomeportWireTests", dependencies: ["HomeportWire"]),
        .testTarget(name: "HomeportLifecycleTests", dependencies: ["HomeportLifecycle"]),
        .testTarget(name: "HomeportLoggingTests", dependencies: ["HomeportLogging", "HomeportTestSupport"]),
        .testTarget(name: "HomeportCryptoTests", dependencies: ["HomeportCrypto", "HomeportTestSupport"]),
        .testTarget(name: "HomeportCurlTests", dependencies: ["HomeportCurl", "CCurl"]),
        .testTarget(
            name: "HomeportAPNsTests", dependencies: ["HomeportAPNs", "HomeportCrypto", "HomeportTestSupport"]
        ),
        .testTarget(
            name: "HomeportClientTests",
            dependencies: [
                "HomeportClient", "HomeportClientSnippets", "HomeportCrypto", "HomeportCurl", "HomeportTestSupport",
                "HomeportWire",
            ]
        ),
        .testTarget(
            name: "HomeportHTTPTests",
            dependencies: ["HomeportHTTP", "HomeportLogging", "HomeportTestSupport"]
        ),
        .testTarget(
            name: "HomeportStorageTests",
            dependencies: ["HomeportStorage", "HomeportTestSupport"]
        ),
        .testTarget(
            name: "HomeportServerTests",
            dependencies: [
                "HomeportServer", "HomeportGateway", "HomeportCommandLine", "HomeportTestSupport", "HomeportCrypto",
                "HomeportLogging", "HomeportStorage", "HomeportWire", "HomeportAPNs", "HomeportTesting",
                "HomeportWebAuthn", "HomeportCurl",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
