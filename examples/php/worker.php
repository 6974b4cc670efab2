<?php
// A toy payment service around idempotency.php, used by test/php-writer.test.ts.
//
//   php worker.php --dsn postgresql://user:pass@host:5432/db [--scope S] [--operation O] \
//       [--key K --amount 1299 [--decline]]          one job from the arguments, or
//       [--jobs '[{"key":"k1","amount":1299}, ...]']  a JSON job list (on stdin when neither is given)
//   MySQL/MariaDB: --dsn mysql://user:pass@host:3306/db (or mariadb://…).
//   A PDO DSN works too: --dsn 'pgsql:host=…;dbname=…' (or 'mysql:host=…;dbname=…;charset=utf8mb4') --user U [--password P].
//
// It connects, prints {"ready":true} and only then reads stdin, so a test can start many
// workers and release them at the same moment. One JSON line per job on stdout.
declare(strict_types=1);
require __DIR__ . '/idempotency.php';

$opt = getopt('', ['dsn:', 'user:', 'password:', 'scope:', 'operation:', 'key:', 'amount:', 'currency:', 'decline', 'jobs:', 'sleep-ms:']);
[$dsn, $user, $password] = pdo_dsn($opt['dsn'] ?? getenv('DATABASE_URL') ?: '', $opt['user'] ?? null, $opt['password'] ?? null);
$store = new IdempotencyStore(new PDO($dsn, $user, $password));
$out = fn (array $line) => print(json_encode($line, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_THROW_ON_ERROR) . "\n");
$out(['ready' => true, 'pid' => getmypid()]);

if (isset($opt['key'])) {
    $jobs = [['key' => $opt['key'], 'amount' => (int) ($opt['amount'] ?? 1299), 'decline' => isset($opt['decline'])]];
} else {
    $jobs = json_decode($opt['jobs'] ?? stream_get_contents(STDIN), true, 512, JSON_THROW_ON_ERROR);
}
$scope = $opt['scope'] ?? 'tenant:acme';
$operation = $opt['operation'] ?? 'capture_payment';
$currency = $opt['currency'] ?? 'EUR';
$sleepMs = (int) ($opt['sleep-ms'] ?? 40);

foreach ($jobs as $job) {
    $amount = $job['amount'];
    // What the client asked for. The hash covers the intent, not transport details.
    $payload = ['amount' => $amount, 'currency' => $currency, 'description' => 'Café – Müller / order 🎉'];
    try {
        $r = $store->begin($scope, $operation, $job['key'] ?? null, $payload, 86400, ['amount_minor' => $amount, 'currency' => $currency, 'provider' => 'mockpay']);
    } catch (IdempotencyError $e) {
        $out(['key' => $job['key'] ?? null, 'outcome' => 'error', 'http' => $e->getCode(), 'error' => $e->getMessage(), 'executed' => false]);
        continue;
    }
    if ($r['outcome'] !== 'owner') {
        // replay: send $r['http'], every header pair in order, then $r['body'] unchanged.
        $out(['key' => $job['key']] + $r + ['executed' => false]);
        continue;
    }
    usleep($sleepMs * 1000); // "call the payment provider"
    if (!empty($job['decline'])) {
        [$code, $headers, $body] = [402, [['Content-Type', 'application/json']], '{"error":"card_declined"}'];
        $store->fail($r['id'], $code, $headers, $body, 'card declined by mockpay');
    } else {
        $chargeId = 'ch_' . bin2hex(random_bytes(8));
        $code = 201;
        $headers = [['Content-Type', 'application/json'], ['X-Charge-Id', $chargeId]];
        $body = json_encode(['id' => $chargeId, 'amount' => $amount, 'currency' => $currency, 'note' => 'é/ü 🎉'], JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE) . "\n";
        $store->complete($r['id'], $code, $headers, $body, $chargeId, 'psp_' . $chargeId);
    }
    $out(['key' => $job['key'], 'outcome' => 'owner', 'http' => $code, 'id' => $r['id'], 'headers' => $headers, 'body' => $body, 'executed' => true]);
}
