<?php
// ?s=N sleeps N seconds (default 1), then answers "slow".
$s = isset($_GET['s']) ? (float) $_GET['s'] : 1.0;
usleep((int) ($s * 1000000));
echo "slow";
