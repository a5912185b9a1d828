<?php
echo "sub index";